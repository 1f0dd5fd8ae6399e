package static

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// place renames each object for static loading and files it under its
// plugin's directory, in the order given. An object the loaders do not
// accept (another API version, a Deployment) is refused, never dropped.
func place(objs []runtime.Object) (map[string][]runtime.Object, error) {
	byDir := map[string][]runtime.Object{}
	for _, obj := range objs {
		if err := rename(obj); err != nil {
			return nil, err
		}
		gvk := obj.GetObjectKind().GroupVersionKind()
		plugin, ok := PluginFor(gvk.Kind)
		if !ok || gvk.GroupVersion() != admissionregistrationv1.SchemeGroupVersion {
			return nil, fmt.Errorf("static manifests hold admissionregistration.k8s.io/v1 policies, bindings and webhook configurations only, not %s %s", gvk.GroupVersion(), gvk.Kind)
		}
		byDir[plugin.Dir] = append(byDir[plugin.Dir], obj)
	}
	return byDir, nil
}

// rename gives obj (and the policy a binding names) the reserved suffix, and
// refuses what the loader refuses in it: parameters and Service references.
func rename(obj runtime.Object) error {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		o.Name = Name(o.Name)
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		o.Name = Name(o.Name)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		o.Name, o.Spec.PolicyName = Name(o.Name), Name(o.Spec.PolicyName)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		o.Name, o.Spec.PolicyName = Name(o.Name), Name(o.Spec.PolicyName)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		o.Name = Name(o.Name)
		for _, w := range o.Webhooks {
			if err := urlOnly(o.Name, w.Name, w.ClientConfig); err != nil {
				return err
			}
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		o.Name = Name(o.Name)
		for _, w := range o.Webhooks {
			if err := urlOnly(o.Name, w.Name, w.ClientConfig); err != nil {
				return err
			}
		}
	}
	return nil
}

// urlOnly refuses a webhook the static loader cannot call: it needs
// clientConfig.url, never a Service.
func urlOnly(config, webhook string, cc admissionregistrationv1.WebhookClientConfig) error {
	if cc.Service != nil || cc.URL == nil || *cc.URL == "" {
		return fmt.Errorf("webhook %q in %q: static webhook configurations need clientConfig.url (kube-apiserver refuses clientConfig.service)", webhook, config)
	}
	return nil
}
