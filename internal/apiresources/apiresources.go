package apiresources

import "slices"

// Resource is one REST resource a kube-apiserver release serves in one
// group version.
type Resource struct {
	Group, Version, Resource, Kind string
	// Namespaced is false for cluster-scoped resources.
	Namespaced bool
	// Preferred says Version is the group's preferred version.
	Preferred bool
	// Subresources are the resource's subresources (status, scale, ...).
	Subresources []string
}

// ByKind returns the resources that serve kind in the group's preferred
// version, in every group that has one (Event is served by the core group
// and by events.k8s.io); group "*" means any group. Alpha and beta versions
// that are not a group's preferred one are left out: a policy names the
// kind, and matchPolicy Equivalent covers its other versions.
func ByKind(group, kind string) []Resource {
	var out []Resource
	for _, r := range builtins {
		if r.Kind == kind && r.Preferred && (group == "*" || r.Group == group) {
			out = append(out, r)
		}
	}
	return out
}

// ByResource returns the resource of group and resource name in the
// group's preferred version.
func ByResource(group, resource string) (Resource, bool) {
	for _, r := range builtins {
		if r.Group == group && r.Resource == resource && r.Preferred {
			return r, true
		}
	}
	return Resource{}, false
}

// HasSubresource reports whether r has the subresource sub.
func (r Resource) HasSubresource(sub string) bool { return slices.Contains(r.Subresources, sub) }
