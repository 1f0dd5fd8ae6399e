package upstream

import (
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/admitc/admitc/ir"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"
)

// clientset is the fake clientset with a discovery that serves OpenAPI v3
// for the core, apps and batch groups (the documents client-go embeds): the
// mutating plugin builds a type converter per kind from it and refuses to
// patch a kind it has none for, and client-go's fake discovery panics.
type clientset struct {
	*fake.Clientset
}

var _ kubernetes.Interface = clientset{}

func (c clientset) Discovery() discovery.DiscoveryInterface {
	return noOpenAPIDiscovery{c.Clientset.Discovery().(*fakediscovery.FakeDiscovery)}
}

type noOpenAPIDiscovery struct{ *fakediscovery.FakeDiscovery }

func (noOpenAPIDiscovery) OpenAPIV3() openapi.Client { return openapitest.NewEmbeddedFileClient() }

// objectInterfaces are the scheme's object interfaces with an equivalent
// resource registry that knows admitc's kinds (the scheme's own is empty,
// and the plugins look the request's kind up in it).
type objectInterfaces struct {
	admission.ObjectInterfaces
	registry k8sruntime.EquivalentResourceRegistry
}

func (o objectInterfaces) GetEquivalentResourceMapper() k8sruntime.EquivalentResourceMapper {
	return o.registry
}

func newObjectInterfaces() admission.ObjectInterfaces {
	reg := k8sruntime.NewEquivalentResourceRegistry()
	for _, table := range [][]ir.WorkloadKind{ir.PodKinds, ir.OtherKinds} {
		for _, k := range table {
			gvr := schema.GroupVersionResource{Group: k.Resource.Group, Version: k.Resource.Version, Resource: k.Resource.Resource}
			gvk := schema.GroupVersionKind{Group: k.Resource.Group, Version: k.Resource.Version, Kind: k.Resource.Kind}
			reg.RegisterKindFor(gvr, "", gvk)
			for _, sub := range k.Resource.Subresources {
				reg.RegisterKindFor(gvr, sub, gvk)
			}
		}
	}
	return objectInterfaces{ObjectInterfaces: admission.NewObjectInterfacesFromScheme(scheme.Scheme), registry: reg}
}
