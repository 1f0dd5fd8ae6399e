// Package upstream runs the Kubernetes API server's own admission policy
// plugins (k8s.io/apiserver's validating and mutating policy plugins)
// in-process on generated ValidatingAdmissionPolicies, MutatingAdmissionPolicies
// and their bindings, so the generated YAML itself is what is judged. It is
// one engine of `admitc compare`.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// Engine is a pair of in-process admission plugins loaded with policies.
type Engine struct {
	validating *validating.Plugin
	mutating   *mutating.Plugin
	stop       chan struct{}
}

// Objects are the admission objects to load, typed.
type Objects struct {
	ValidatingPolicies []*admissionregistrationv1.ValidatingAdmissionPolicy
	ValidatingBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	MutatingPolicies   []*admissionregistrationv1.MutatingAdmissionPolicy
	MutatingBindings   []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	// Params are parameter objects (ConfigMaps) for policies with paramKind.
	Params []*unstructured.Unstructured
	// Namespaces are the namespaces requests are made in, with their labels.
	Namespaces map[string]map[string]string
}

// New starts both plugins on a fake API (client-go fakes and informers) that
// holds the objects, with the API server's defaults applied to them.
func New(objs Objects) (*Engine, error) {
	quietKlog()
	var kube []k8sruntime.Object
	for _, p := range objs.ValidatingPolicies {
		kube = append(kube, defaultVAP(p.DeepCopy()))
	}
	for _, b := range objs.ValidatingBindings {
		kube = append(kube, defaultVAPB(b.DeepCopy()))
	}
	for _, p := range objs.MutatingPolicies {
		kube = append(kube, defaultMAP(p.DeepCopy()))
	}
	for _, b := range objs.MutatingBindings {
		kube = append(kube, defaultMAPB(b.DeepCopy()))
	}
	for ns, labels := range objs.Namespaces {
		l := map[string]string{"kubernetes.io/metadata.name": ns}
		for k, v := range labels {
			l[k] = v
		}
		kube = append(kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}})
	}
	// The plugins read parameter objects of built-in kinds (ConfigMaps)
	// through the typed informers, others through the dynamic client, so a
	// parameter object goes to the client its plugin will ask.
	var params []k8sruntime.Object
	listKinds := map[schema.GroupVersionResource]string{{Version: "v1", Resource: "configmaps"}: "ConfigMapList"}
	for _, p := range objs.Params {
		if typed, err := scheme.Scheme.New(p.GroupVersionKind()); err == nil {
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(p.Object, typed); err != nil {
				return nil, fmt.Errorf("parameter object %s: %w", p.GetName(), err)
			}
			kube = append(kube, typed)
			continue
		}
		params = append(params, p.DeepCopy())
		gvr, _ := meta.UnsafeGuessKindToResource(p.GroupVersionKind())
		listKinds[gvr] = p.GetKind() + "List"
	}
	client := clientset{fake.NewSimpleClientset(kube...)}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), listKinds, params...)
	factory := informers.NewSharedInformerFactory(client, 0)
	e := &Engine{stop: make(chan struct{})}
	var err error
	if e.validating, err = validating.NewPlugin(nil); err != nil {
		return nil, err
	}
	if e.mutating, err = mutating.NewPlugin(nil); err != nil {
		return nil, err
	}
	e.mutating.SetEnabled(true)
	if err := e.init(factory, client, dyn); err != nil {
		return nil, err
	}
	factory.Start(e.stop)
	if err := e.waitReady(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// pluginSetters are the initialisers both plugins share.
type pluginSetters interface {
	SetExternalKubeInformerFactory(informers.SharedInformerFactory)
	SetExternalKubeClientSet(kubernetes.Interface)
	SetRESTMapper(meta.RESTMapper)
	SetDynamicClient(dynamic.Interface)
	SetDrainedNotification(<-chan struct{})
	SetAuthorizer(authorizer.Authorizer)
	ValidateInitialization() error
}

func (e *Engine) init(factory informers.SharedInformerFactory, client kubernetes.Interface, dyn *dynamicfake.FakeDynamicClient) error {
	mapper := restMapper()
	authz := authorizerfactory.NewAlwaysAllowAuthorizer()
	for _, p := range []pluginSetters{e.validating, e.mutating} {
		p.SetExternalKubeInformerFactory(factory)
		p.SetExternalKubeClientSet(client)
		p.SetRESTMapper(mapper)
		p.SetDynamicClient(dyn)
		p.SetDrainedNotification(e.stop)
		p.SetAuthorizer(authz)
		if err := p.ValidateInitialization(); err != nil {
			return fmt.Errorf("initialise the upstream plugin: %w", err)
		}
	}
	return nil
}

// waitReady waits until both plugins have loaded and compiled every policy.
func (e *Engine) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if e.validating.WaitForReady() && e.mutating.WaitForReady() {
			// Informers have synced; give the policy sources a moment to compile hooks.
			time.Sleep(200 * time.Millisecond)
			return nil
		}
	}
	return errors.New("the upstream admission plugins did not become ready")
}

// Close stops the plugins' informers.
func (e *Engine) Close() { close(e.stop) }

// Decision is what the plugins decided for one object.
type Decision struct {
	Allowed  bool
	Message  string
	Warnings []string
	Object   *unstructured.Unstructured
}

type recorder struct{ warnings []string }

func (r *recorder) AddWarning(_, text string) { r.warnings = append(r.warnings, text) }

// Admit runs the mutating plugin, then the validating plugin on the mutated
// object, as the API server's admission chain does, for a CREATE of obj.
func (e *Engine) Admit(ctx context.Context, obj *unstructured.Unstructured, namespace string) (*Decision, error) {
	req := runtime.RequestFor(obj.DeepCopy(), nil, namespace)
	object := req.Object
	attrs := admission.NewAttributesRecord(object, nil, req.Kind, req.Namespace, req.Name, req.Resource, "",
		admission.Operation(ir.Create), &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admitc-compare"})
	rec := &recorder{}
	ctx = warning.WithWarningRecorder(ctx, rec)
	o := newObjectInterfaces()
	if err := e.mutating.Admit(ctx, attrs, o); err != nil {
		return &Decision{Allowed: false, Message: err.Error(), Warnings: rec.warnings, Object: object}, nil
	}
	if err := e.validating.Validate(ctx, attrs, o); err != nil {
		return &Decision{Allowed: false, Message: err.Error(), Warnings: rec.warnings, Object: object}, nil
	}
	return &Decision{Allowed: true, Warnings: rec.warnings, Object: object}, nil
}

func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, table := range [][]ir.WorkloadKind{ir.PodKinds, ir.OtherKinds} {
		for _, k := range table {
			gv := schema.GroupVersion{Group: k.Resource.Group, Version: k.Resource.Version}
			scope := meta.RESTScopeNamespace
			if k.Resource.Kind == "Namespace" {
				scope = meta.RESTScopeRoot
			}
			m.AddSpecific(gv.WithKind(k.Resource.Kind), gv.WithResource(k.Resource.Resource), gv.WithResource(k.Resource.Resource[:len(k.Resource.Resource)-1]), scope)
		}
	}
	return m
}

// quietKlog stops the informers' progress lines from mixing with command
// output.
func quietKlog() {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
}
