package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is the schema version written into ir.json.
const Version = "admitc.dev/ir/v1"

// PolicySet is a compiled set of policies, in the order they were declared.
type PolicySet struct {
	// Version identifies the IR schema; see Version.
	Version string `json:"version"`
	// Policies are the compiled policies, in declaration order.
	Policies []Policy `json:"policies"`
	// Skipped are the policies and rules left out because they need what
	// admitc cannot evaluate; only a compilation that keeps going has any.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Origin says where an IR node came from: a file position and the field path
// inside the policy file (for example policies[2].validations[0].expression).
type Origin struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Path   string `json:"path"`
}

// PolicyKind says whether a policy judges objects or changes them.
type PolicyKind string

const (
	// Validating policies produce violations and never change the object.
	Validating PolicyKind = "Validating"
	// Mutating policies produce JSON Patch mutations and never deny.
	Mutating PolicyKind = "Mutating"
)

// Action is a ValidatingAdmissionPolicyBinding validationAction.
type Action string

const (
	// Deny rejects the request.
	Deny Action = "Deny"
	// Warn admits the request and returns a warning to the client.
	Warn Action = "Warn"
	// Audit admits the request and records an audit annotation.
	Audit Action = "Audit"
)

// FailurePolicy says what an evaluation error means.
type FailurePolicy string

const (
	// Fail turns an evaluation error into a violation.
	Fail FailurePolicy = "Fail"
	// Ignore drops evaluation errors.
	Ignore FailurePolicy = "Ignore"
)

// Operation is an admission operation.
type Operation string

const (
	// Create is the CREATE operation.
	Create Operation = "CREATE"
	// Update is the UPDATE operation.
	Update Operation = "UPDATE"
	// Delete is the DELETE operation.
	Delete Operation = "DELETE"
	// Connect is the CONNECT operation.
	Connect Operation = "CONNECT"
)

// ParameterNotFoundAction says what happens when a policy's params are missing.
type ParameterNotFoundAction string

const (
	// ParamDeny denies the request when no parameter object is found.
	ParamDeny ParameterNotFoundAction = "Deny"
	// ParamAllow skips the policy when no parameter object is found.
	ParamAllow ParameterNotFoundAction = "Allow"
)

// ReinvocationPolicy is a MutatingAdmissionPolicy reinvocationPolicy.
type ReinvocationPolicy string

const (
	// ReinvokeNever runs a mutation once.
	ReinvokeNever ReinvocationPolicy = "Never"
	// ReinvokeIfNeeded runs a mutation again when a later mutation changed the object.
	ReinvokeIfNeeded ReinvocationPolicy = "IfNeeded"
)

// Policy is one compiled policy.
type Policy struct {
	Name   string     `json:"name"`
	Type   string     `json:"type"`
	Kind   PolicyKind `json:"kind"`
	Origin Origin     `json:"origin"`
	// Actions are the validationActions of a validating policy; empty for mutating ones.
	Actions       []Action      `json:"actions,omitempty"`
	FailurePolicy FailurePolicy `json:"failurePolicy"`
	// ReinvocationPolicy is set on mutating policies only.
	ReinvocationPolicy ReinvocationPolicy `json:"reinvocationPolicy,omitempty"`
	Match              Match              `json:"match"`
	ParamKind          *ParamKind         `json:"paramKind,omitempty"`
	ParamRef           *ParamRef          `json:"paramRef,omitempty"`
	MatchConditions    []NamedExpression  `json:"matchConditions,omitempty"`
	Variables          []NamedExpression  `json:"variables,omitempty"`
	Validations        []Validation       `json:"validations,omitempty"`
	AuditAnnotations   []AuditAnnotation  `json:"auditAnnotations,omitempty"`
	Mutations          []Mutation         `json:"mutations,omitempty"`
	// Parameters are a built-in type's own settings, kept beside the CEL they
	// were lowered to so a backend can use a native idiom where one exists.
	Parameters *Parameters `json:"parameters,omitempty"`
	// MatchConstraints and Bindings are set on imported policies; see
	// binding.go. Match, Actions and ParamRef then do not apply.
	MatchConstraints *MatchResources `json:"matchConstraints,omitempty"`
	Bindings         []Binding       `json:"bindings,omitempty"`
	// UnresolvedKinds are the kinds the source names (a Kyverno kinds
	// entry) that neither the release's resource list nor a CRD given
	// resolves: MatchConstraints cover each with a guess (every group, the
	// kind's conventional plural), which the runtime matches, and a
	// backend that must name the resources it registers refuses them.
	UnresolvedKinds []UnresolvedKind `json:"unresolvedKinds,omitempty"`
	// From names the other engine's policy and rule this policy was read
	// from, when its name alone does not (see PolicyRef).
	From *PolicyRef `json:"from,omitempty"`
	// Notes say what the compiler decided on the policy's behalf that its
	// author should know (for example: it covers Pods only, and why).
	Notes []string `json:"notes,omitempty"`
	// CEL is the CEL environment the policy's expressions are written for
	// (see CELDialect); empty for the API server's own.
	CEL CELDialect `json:"cel,omitempty"`
	// CELNamespace is the namespace of a namespaced Kyverno policy: its
	// resource library reads that namespace only, as Kyverno's does.
	CELNamespace string `json:"celNamespace,omitempty"`
	// SchemaReads are set on a policy translated against the schema of
	// the kinds it matches: what it assumed of the objects it judges. The
	// API server guarantees it of every object it admits; offline, an
	// object that does not agree is judged by Dynamic instead.
	SchemaReads []SchemaRead `json:"schemaReads,omitempty"`
	// Dynamic is the same policy translated for objects of any shape:
	// exact wherever SchemaReads do not hold. It is never emitted.
	Dynamic *Policy `json:"dynamic,omitempty"`
	// OfflineAnnotations are audit annotations that only admitc's offline
	// tools evaluate (a Kyverno rule's skip, for admitc verify): never
	// emitted, so the API server never pays for them.
	OfflineAnnotations []AuditAnnotation `json:"offlineAnnotations,omitempty"`
}

// CELDialect names the CEL environment a policy's expressions are written
// for. The same text can mean different things in two environments (a
// library that one has and the other lacks, a macro that one rewrites), so
// the runtime evaluates each policy in its own, and a backend that emits the
// policy for another engine rewrites it or says why it cannot.
type CELDialect string

const (
	// CELKubernetes is the API server's environment for admission policies
	// (ValidatingAdmissionPolicy, MutatingAdmissionPolicy), as configured in
	// k8s.io/apiserver. It is the zero value.
	CELKubernetes CELDialect = ""
	// CELKyvernoRule is the environment of a Kyverno ClusterPolicy's
	// validate.cel rule (Kyverno v1.19 pkg/admissionpolicy): the API
	// server's, with Kyverno's orValue compatibility macro (x.orValue(y) on a
	// value that is not optional returns the value).
	CELKyvernoRule CELDialect = "KyvernoRule"
	// CELKyverno is the environment of policies.kyverno.io policies
	// (ValidatingPolicy, MutatingPolicy; Kyverno v1.19 pkg/cel/compiler):
	// the orValue macro, Kyverno's libraries (image, resource, globalContext,
	// user, time, hash, json, yaml, x509, math, transform, gzip, random),
	// request.object and request.oldObject, no params and no authorizer. Its
	// validations are evaluated as Kyverno evaluates them: in order, the
	// first that fails or errors decides, and an error fails the policy
	// whatever its failurePolicy (which applies to matchConditions only).
	CELKyverno CELDialect = "Kyverno"
)

// Parameters are the settings of a built-in policy type.
type Parameters struct {
	// Labels are required label keys (required-labels).
	Labels []string `json:"labels,omitempty"`
	// SetLabels are labels to set (add-labels).
	SetLabels map[string]string `json:"setLabels,omitempty"`
	// Requests are requests to add (default-requests).
	Requests map[string]string `json:"requests,omitempty"`
	// Registries are allowed registries (allowed-registries).
	Registries []string `json:"registries,omitempty"`
	// AllowedPaths are allowed hostPath prefixes (no-host-path).
	AllowedPaths []string `json:"allowedPaths,omitempty"`
}

// Match selects the requests a policy judges.
type Match struct {
	Resources  []Resource  `json:"resources"`
	Operations []Operation `json:"operations"`
}

// Resource is one kind a policy matches, with the REST resource that serves it.
type Resource struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	// Subresources are matched in addition to the resource itself
	// (pods/ephemeralcontainers, so kubectl debug cannot bypass a pod policy).
	Subresources []string `json:"subresources,omitempty"`
	// SubresourcesOnly matches the Subresources and not the resource itself
	// (a policy for kubectl debug matches only pods/ephemeralcontainers).
	SubresourcesOnly bool `json:"subresourcesOnly,omitempty"`
}

// ParamKind names the kind of a policy's parameter objects.
type ParamKind struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ParamRef selects the parameter objects a binding uses: one by name, or
// every object of the policy's paramKind its selector matches.
type ParamRef struct {
	Name                    string                  `json:"name,omitempty"`
	Namespace               string                  `json:"namespace,omitempty"`
	Selector                *LabelSelector          `json:"selector,omitempty"`
	ParameterNotFoundAction ParameterNotFoundAction `json:"parameterNotFoundAction"`
}

// NamedExpression is a named CEL expression: a variable or a match condition.
type NamedExpression struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
	Origin     Origin `json:"origin"`
}

// Validation is one CEL check; the object violates it when Expression is not true.
type Validation struct {
	Expression        string `json:"expression"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
	// Reason is the HTTP reason of a denial (Forbidden when empty).
	Reason string `json:"reason,omitempty"`
	Origin Origin `json:"origin"`
	// MessageExpressionOrigin is where MessageExpression is written, when set.
	MessageExpressionOrigin *Origin `json:"messageExpressionOrigin,omitempty"`
}

// AuditAnnotation is a CEL expression whose string value is recorded under Key.
type AuditAnnotation struct {
	Key             string `json:"key"`
	ValueExpression string `json:"valueExpression"`
	Origin          Origin `json:"origin"`
}

// PatchType is how a mutation changes the object.
type PatchType string

const (
	// JSONPatch mutations are CEL expressions returning a list of JSONPatch operations.
	JSONPatch PatchType = "JSONPatch"
	// ApplyConfiguration mutations are CEL expressions returning an
	// Object{...} merged into the object as a server-side apply would.
	ApplyConfiguration PatchType = "ApplyConfiguration"
)

// Mutation is one CEL mutation of a mutating policy.
type Mutation struct {
	PatchType  PatchType `json:"patchType"`
	Expression string    `json:"expression"`
	Origin     Origin    `json:"origin"`
}

// IsPodPolicy reports whether the policy matches Pods, so it must also match
// the pods/ephemeralcontainers subresource.
func (p *Policy) IsPodPolicy() bool {
	for _, r := range p.Match.Resources {
		if r.Group == "" && r.Resource == "pods" {
			return true
		}
	}
	return false
}

// HasAction reports whether a is one of the policy's validation actions.
func (p *Policy) HasAction(a Action) bool {
	for _, x := range p.Actions {
		if x == a {
			return true
		}
	}
	return false
}

// SchemaAbsent is the shape of a field a translation read that its kind's
// schema does not have: the API server drops it, so the translation
// assumed it is never there.
const SchemaAbsent = "absent"

// SchemaRead is one field a translation typed against its kind's schema
// reads: its path (spec.containers[].image: [] stands for every element
// of a list, or every value of a map),
// the shape it assumed the field has when present (object, map, list,
// string, integer, number, boolean, int-or-string, or SchemaAbsent), and
// whether it assumed every object has it. An object offline that does not
// agree (a value of another shape, a null, a field assumed present that is
// missing, an unknown field that is there) is judged by the policy's
// exact dynamic translation instead (Policy.Dynamic).
type SchemaRead struct {
	Path    string `json:"path"`
	Shape   string `json:"shape"`
	Present bool   `json:"present,omitempty"`
	// Enum, when set, is the only values the field holds: the API
	// server's validation of its kind refuses any other.
	Enum []string `json:"enum,omitempty"`
	// UniqueKey, when set on a list, is a field whose values its elements
	// never share: the API server's validation of its kind refuses
	// duplicates (two containers of a pod with one name).
	UniqueKey string `json:"uniqueKey,omitempty"`
	// Format, when set, is what the API server makes sure of the string
	// before admission: FormatQuantity, FormatCanonicalQuantity,
	// FormatDNSLabel or FormatLabelValue; or FormatPlainQuantity, which
	// it does not.
	Format string `json:"format,omitempty"`
}

// SchemaRead formats.
const (
	// FormatQuantity is a resource quantity: the API server parses it
	// when it decodes the object (resource.ParseQuantity accepts it).
	FormatQuantity = "quantity"
	// FormatCanonicalQuantity is a resource quantity as the API server
	// writes it after decoding the object: resource.Quantity's String()
	// (1000m is written 1, 1024Mi 1Gi; a text already in a form it keeps,
	// such as 1.5m or 1E3, stays as written).
	FormatCanonicalQuantity = "canonical-quantity"
	// FormatPlainQuantity is a quantity as the API server writes it that
	// Kyverno reads as one value to compare with, not as a range: without
	// an exponent's minus sign (1e-3 or 1E-3 reads as the range from 1e to
	// 3). The API server admits such a quantity; a typed translation that
	// assumed this raises admitc's error there, and offline an object
	// that holds one is judged by the exact form.
	FormatPlainQuantity = "plain-quantity"
	// FormatDNSLabel is a DNS-1123 label, as the API server's validation
	// requires of a container's, a volume's and a volume mount's name.
	FormatDNSLabel = "dns-label"
	// FormatLabelValue is a label's value: at most 63 ASCII letters,
	// digits, '-', '_' and '.', as the API server's validation requires.
	FormatLabelValue = "label-value"
)

// SchemaPath is the path of key under path in a SchemaRead: path.key, or
// path["key"] for a key that is not a plain name (a label key).
func SchemaPath(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// SchemaPathSteps splits a SchemaRead path into its keys, "[]" standing
// for every element of a list.
func SchemaPathSteps(path string) ([]string, error) {
	var out []string
	for path != "" {
		switch {
		case strings.HasPrefix(path, "[]"):
			out, path = append(out, "[]"), path[2:]
		case strings.HasPrefix(path, "["):
			end := strings.Index(path, "\"]")
			for end >= 0 && strings.HasSuffix(path[:end+1], "\\\"") {
				next := strings.Index(path[end+2:], "\"]")
				if next < 0 {
					end = -1
					break
				}
				end += 2 + next
			}
			if end < 0 {
				return nil, fmt.Errorf("schema path %q: an unterminated key", path)
			}
			key, err := strconv.Unquote(path[1 : end+1])
			if err != nil {
				return nil, fmt.Errorf("schema path %q: %v", path, err)
			}
			out, path = append(out, key), path[end+2:]
		default:
			path = strings.TrimPrefix(path, ".")
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			out, path = append(out, path[:end]), path[end:]
		}
	}
	return out, nil
}
