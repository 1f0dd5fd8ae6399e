package ir

import "strings"

// WorkloadKind describes a kind that carries a pod spec, and where.
type WorkloadKind struct {
	Resource Resource
	// PodSpecPath is the dotted path to the pod spec inside the object.
	PodSpecPath string
	// PodMetadataPath is the dotted path to the metadata of the pod it creates.
	PodMetadataPath string
}

// PodKinds are the kinds a policy without match.kinds covers: Pods and every
// workload with a pod template, so a bad Deployment is refused at the
// Deployment, not later in its ReplicaSet.
var PodKinds = []WorkloadKind{
	{Resource{Group: "", Version: "v1", Kind: "Pod", Resource: "pods", Subresources: []string{"ephemeralcontainers"}}, "spec", "metadata"},
	{Resource{Group: "apps", Version: "v1", Kind: "ReplicaSet", Resource: "replicasets"}, "spec.template.spec", "spec.template.metadata"},
	{Resource{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}, "spec.template.spec", "spec.template.metadata"},
	{Resource{Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets"}, "spec.template.spec", "spec.template.metadata"},
	{Resource{Group: "apps", Version: "v1", Kind: "DaemonSet", Resource: "daemonsets"}, "spec.template.spec", "spec.template.metadata"},
	{Resource{Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs"}, "spec.template.spec", "spec.template.metadata"},
	{Resource{Group: "batch", Version: "v1", Kind: "CronJob", Resource: "cronjobs"}, "spec.jobTemplate.spec.template.spec", "spec.jobTemplate.spec.template.metadata"},
}

// WorkloadKindByName returns the pod-carrying kind with the given Kind name.
func WorkloadKindByName(kind string) (WorkloadKind, bool) {
	for _, k := range PodKinds {
		if k.Resource.Kind == kind {
			return k, true
		}
	}
	return WorkloadKind{}, false
}

// OtherKinds are kinds without a pod spec that cel policies may match.
var OtherKinds = []WorkloadKind{
	{Resource: Resource{Group: "", Version: "v1", Kind: "Namespace", Resource: "namespaces"}},
	{Resource: Resource{Group: "", Version: "v1", Kind: "Service", Resource: "services"}},
	{Resource: Resource{Group: "", Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}},
	{Resource: Resource{Group: "", Version: "v1", Kind: "Secret", Resource: "secrets"}},
	{Resource: Resource{Group: "", Version: "v1", Kind: "ServiceAccount", Resource: "serviceaccounts"}},
	{Resource: Resource{Group: "", Version: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims"}},
	{Resource: Resource{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Resource: "ingresses"}},
	{Resource: Resource{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy", Resource: "networkpolicies"}},
}

// OtherKindByName returns the kind without pod spec with the given Kind name.
func OtherKindByName(kind string) (WorkloadKind, bool) {
	for _, k := range OtherKinds {
		if k.Resource.Kind == kind {
			return k, true
		}
	}
	return WorkloadKind{}, false
}

// KindForResource returns the kind served by group/resource, from both tables.
func KindForResource(group, resource string) (WorkloadKind, bool) {
	for _, table := range [][]WorkloadKind{PodKinds, OtherKinds} {
		for _, k := range table {
			if k.Resource.Group == group && k.Resource.Resource == resource {
				return k, true
			}
		}
	}
	return WorkloadKind{}, false
}

// ResourceForKind returns the REST resource that serves kind in group: from
// admitc's kind tables, else the API server's conventional lower-case plural
// (Endpoints and kinds ending in s, x, ch or sh take "es", a consonant and y
// takes "ies").
func ResourceForKind(group, kind string) string {
	for _, table := range [][]WorkloadKind{PodKinds, OtherKinds} {
		for _, k := range table {
			if k.Resource.Group == group && k.Resource.Kind == kind {
				return k.Resource.Resource
			}
		}
	}
	lower := strings.ToLower(kind)
	switch {
	case lower == "endpoints":
		return lower
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return lower + "es"
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return strings.TrimSuffix(lower, "y") + "ies"
	}
	return lower + "s"
}
