package defaults

import (
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	admissionregistration "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	apiserverinternal "k8s.io/kubernetes/pkg/apis/apiserverinternal/install"
	apps "k8s.io/kubernetes/pkg/apis/apps/install"
	authentication "k8s.io/kubernetes/pkg/apis/authentication/install"
	authorization "k8s.io/kubernetes/pkg/apis/authorization/install"
	autoscaling "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	batch "k8s.io/kubernetes/pkg/apis/batch/install"
	certificates "k8s.io/kubernetes/pkg/apis/certificates/install"
	coordination "k8s.io/kubernetes/pkg/apis/coordination/install"
	core "k8s.io/kubernetes/pkg/apis/core/install"
	discovery "k8s.io/kubernetes/pkg/apis/discovery/install"
	events "k8s.io/kubernetes/pkg/apis/events/install"
	extensions "k8s.io/kubernetes/pkg/apis/extensions/install"
	flowcontrol "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	networking "k8s.io/kubernetes/pkg/apis/networking/install"
	node "k8s.io/kubernetes/pkg/apis/node/install"
	policy "k8s.io/kubernetes/pkg/apis/policy/install"
	rbac "k8s.io/kubernetes/pkg/apis/rbac/install"
	resource "k8s.io/kubernetes/pkg/apis/resource/install"
	scheduling "k8s.io/kubernetes/pkg/apis/scheduling/install"
	storage "k8s.io/kubernetes/pkg/apis/storage/install"
	storagemigration "k8s.io/kubernetes/pkg/apis/storagemigration/install"
)

// installers are the API groups kube-apiserver serves as REST resources, each
// with its internal version, every versioned API, their generated defaulters
// and conversions. Groups that are only request/response envelopes
// (admission, imagepolicy, apidiscovery, abac) are left out: nobody creates
// them.
var installers = []func(*k8sruntime.Scheme){
	admissionregistration.Install,
	apiserverinternal.Install,
	apps.Install,
	authentication.Install,
	authorization.Install,
	autoscaling.Install,
	batch.Install,
	certificates.Install,
	coordination.Install,
	core.Install,
	discovery.Install,
	events.Install,
	extensions.Install,
	flowcontrol.Install,
	networking.Install,
	node.Install,
	policy.Install,
	rbac.Install,
	resource.Install,
	scheduling.Install,
	storage.Install,
	storagemigration.Install,
}

// scheme holds the built-in kinds; it is built once and only read afterwards.
var scheme = newScheme()

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, install := range installers {
		install(s)
	}
	return s
}
