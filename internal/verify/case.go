package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// runCase judges a case's object and checks each assertion; r carries the
// file, test and case names.
func runCase(ctx context.Context, engine *runtime.Engine, dir string, r Result, c *tcase) []Result {
	if c.Object == "" || len(c.Assertions) == 0 {
		return []Result{withOutcome(r, Error, "malformed case: it needs an object and at least one assertion")}
	}
	fail := func(err error) []Result {
		var out []Result
		for _, a := range c.Assertions {
			r.Expected = a.String()
			out = append(out, withOutcome(r, Error, err.Error()))
		}
		return out
	}
	req, err := readRequest(filepath.Join(dir, c.Object), engine.PolicySet())
	if err != nil {
		return fail(err)
	}
	res, err := engine.Validate(ctx, req)
	if err != nil {
		return fail(err)
	}
	var messages []string
	for _, v := range res.Violations {
		messages = append(messages, v.Message)
	}
	var out []Result
	for _, a := range c.Assertions {
		out = append(out, a.check(r, messages))
	}
	return out
}

// check judges one assertion against the violation messages, as gator's
// Assertion.Run does.
func (a assertion) check(r Result, messages []string) Result {
	r.Expected = a.String()
	var re *regexp.Regexp
	if a.Message != nil {
		var err error
		if re, err = regexp.Compile(*a.Message); err != nil {
			return withOutcome(r, Error, "malformed assertion: message is not a Go regexp: "+err.Error())
		}
	}
	var matching []string
	for _, m := range messages {
		if re == nil || re.MatchString(m) {
			matching = append(matching, m)
		}
	}
	r.Got = describeViolations(len(matching), messages, re != nil)
	n := len(matching)
	var ok bool
	switch want := a.want(); want {
	case "yes":
		ok = n > 0
	case "no":
		ok = n == 0
	default:
		count, err := strconv.Atoi(want)
		if err != nil || count < 0 {
			return withOutcome(r, Error, fmt.Sprintf(`malformed assertion: violations must be a non-negative integer, "yes" or "no", got %q`, want))
		}
		ok = n == count
	}
	if ok {
		return withOutcome(r, Passed, "")
	}
	return withOutcome(r, Failed, "")
}

func describeViolations(matching int, messages []string, filtered bool) string {
	s := fmt.Sprintf("%d violation(s)", matching)
	if filtered {
		s = fmt.Sprintf("%d matching violation(s)", matching)
	}
	if len(messages) > 0 {
		quoted := make([]string, len(messages))
		for i, m := range messages {
			quoted[i] = strconv.Quote(m)
		}
		s += ": " + strings.Join(quoted, ", ")
	}
	return s
}

// readRequest builds the request gator reviews for an object file: Kind,
// Name, Namespace and Object of its one object (never defaulted, as gator
// does not default), or the request of an AdmissionReview.
func readRequest(file string, set *ir.PolicySet) (*runtime.Request, error) {
	obj, err := readOneObject(file)
	if err != nil {
		return nil, err
	}
	gvk := obj.GroupVersionKind()
	if gvk.Kind == "AdmissionReview" && gvk.Group == admissionv1.SchemeGroupVersion.Group {
		return reviewRequest(file, obj)
	}
	return &runtime.Request{
		UID: "admitc-verify", Kind: gvk, Resource: runtime.ResourceFor(gvk),
		Operation: reviewOperation(set), Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Object: obj, User: &user.DefaultInfo{},
	}, nil
}

// reviewOperation is the operation of a gator request. Gator sends none and
// Gatekeeper does not filter its reviews by operation; admitc's policy
// matches the template's operations, so the request carries the first of
// them (CREATE by default). Only CEL that reads request.operation could
// tell the difference.
func reviewOperation(set *ir.PolicySet) ir.Operation {
	for _, p := range set.Policies {
		if p.MatchConstraints == nil {
			continue
		}
		for _, r := range p.MatchConstraints.ResourceRules {
			for _, o := range r.Operations {
				if o == ir.Create || o == "*" {
					return ir.Create
				}
			}
			if len(r.Operations) > 0 {
				return r.Operations[0]
			}
		}
	}
	return ir.Create
}

// readOneObject reads the one object of a case's file (gator refuses files
// with more or fewer).
func readOneObject(file string) (*unstructured.Unstructured, error) {
	data, err := inputfile.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read object: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []map[string]any
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not valid YAML or JSON: %v", file, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: a document must be an object: %v", file, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%s holds %d objects; a case's object file must hold exactly one", file, len(objs))
	}
	u := &unstructured.Unstructured{Object: objs[0]}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, fmt.Errorf("%s: the object needs apiVersion and kind", file)
	}
	return u, nil
}

// reviewRequest is the request of an AdmissionReview, decoded strictly as
// gator does; on DELETE the old object is also the object, as Gatekeeper
// sets it.
func reviewRequest(file string, obj *unstructured.Unstructured) (*runtime.Request, error) {
	var ar admissionv1.AdmissionReview
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, &ar, true); err != nil {
		return nil, fmt.Errorf("%s: not an AdmissionReview: %v", file, err)
	}
	if ar.Request == nil {
		return nil, fmt.Errorf("%s: the AdmissionReview has no request", file)
	}
	in := ar.Request
	if in.Object.Raw == nil && in.OldObject.Raw == nil {
		return nil, fmt.Errorf("%s: the AdmissionRequest has no object or oldObject to review", file)
	}
	object, err := rawObject(in.Object.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s: request.object: %v", file, err)
	}
	old, err := rawObject(in.OldObject.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s: request.oldObject: %v", file, err)
	}
	if in.Operation == admissionv1.Delete && object == nil {
		object = old
	}
	req := &runtime.Request{
		UID: string(in.UID), Kind: schema.GroupVersionKind(in.Kind), Resource: schema.GroupVersionResource(in.Resource),
		SubResource: in.SubResource, Operation: ir.Operation(in.Operation), Namespace: in.Namespace, Name: in.Name,
		Object: object, OldObject: old,
		User: &user.DefaultInfo{Name: in.UserInfo.Username, UID: in.UserInfo.UID, Groups: in.UserInfo.Groups},
	}
	if in.DryRun != nil {
		req.DryRun = *in.DryRun
	}
	if req.Resource.Resource == "" {
		req.Resource = runtime.ResourceFor(req.Kind)
	}
	return req, nil
}

func rawObject(raw []byte) (*unstructured.Unstructured, error) {
	if raw == nil {
		return nil, nil
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}
