package compiler

import "github.com/admitc/admitc/ir"

// Built-in policy types.
const (
	TypeDefaultRequests    = "default-requests"
	TypeRequiredLabels     = "required-labels"
	TypeAllowedRegistries  = "allowed-registries"
	TypeImageDigest        = "image-digest"
	TypeDisallowPrivileged = "disallow-privileged"
	TypeRunAsNonRoot       = "run-as-non-root"
	TypeMemoryLimit        = "memory-limit"
	TypeNoHostPath         = "no-host-path"
	TypeAddLabels          = "add-labels"
	TypeCEL                = "cel"
)

// typeInfo says what a policy type is and which fields it takes beyond the
// common ones (name, type, match, failurePolicy, and actions or
// reinvocationPolicy).
type typeInfo struct {
	kind ir.PolicyKind
	// containers is true when the type judges containers, so a Pod policy
	// must also match pods/ephemeralcontainers.
	containers bool
	params     []string
	summary    string
}

// Types lists the built-in policy types by name.
var types = map[string]typeInfo{
	TypeDefaultRequests:    {ir.Mutating, false, []string{"requests"}, "adds missing resource requests (a limit without a request becomes the request)"},
	TypeRequiredLabels:     {ir.Validating, false, []string{"labels"}, "requires labels on the pod a workload creates"},
	TypeAllowedRegistries:  {ir.Validating, true, []string{"registries"}, "allows images only from registries, compared on whole path components"},
	TypeImageDigest:        {ir.Validating, true, nil, "requires images pinned by @sha256 digest"},
	TypeDisallowPrivileged: {ir.Validating, true, nil, "forbids privileged containers in all three container lists"},
	TypeRunAsNonRoot:       {ir.Validating, true, nil, "requires runAsNonRoot: true (container setting wins, else the pod's)"},
	TypeMemoryLimit:        {ir.Validating, true, nil, "requires a memory limit on every container"},
	TypeNoHostPath:         {ir.Validating, false, []string{"allowedPaths"}, "forbids hostPath volumes outside allowedPaths"},
	TypeAddLabels:          {ir.Mutating, false, []string{"labels"}, "sets labels on the object"},
	TypeCEL:                {ir.Validating, true, []string{"validations", "variables", "matchConditions", "auditAnnotations", "paramKind", "paramRef"}, "CEL validations, as in a ValidatingAdmissionPolicy"},
}

// TypeNames returns the built-in type names in a fixed order.
func TypeNames() []string {
	return []string{TypeDefaultRequests, TypeRequiredLabels, TypeAllowedRegistries, TypeImageDigest, TypeDisallowPrivileged,
		TypeRunAsNonRoot, TypeMemoryLimit, TypeNoHostPath, TypeAddLabels, TypeCEL}
}

// TypeSummary returns a one-line description of a built-in type.
func TypeSummary(name string) string { return types[name].summary }
