//go:build !serveonly

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/runtime"
)

// CELOptions are the options of `admitc cel`.
type CELOptions struct {
	Streams
	Expression string
	Object     string
	Old        string
	Params     string
	Namespace  string
	Cluster    clusterFlags
}

// NewCELCommand returns `admitc cel`.
func NewCELCommand(s Streams) *cobra.Command {
	o := &CELOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "cel EXPRESSION --object FILE",
		Short: "Evaluate one CEL expression the way a ValidatingAdmissionPolicy would",
		Long: `Evaluates a CEL expression with the API server's CEL environment and cost
budget, binding object (and oldObject, params, request, namespaceObject) from
files, and prints the value as JSON. A built-in object (and oldObject) is
first defaulted as the API server defaults it; --no-defaults binds it as
written.

Exit codes: 0 the expression evaluated, 1 it failed at evaluation (such as
"no such key: securityContext"), 2 it does not compile or a file is unreadable.`,
		Example: `  # The images of a pod
  admitc cel 'object.spec.containers.map(c, c.image)' --object examples/manifests/tag-only.json

  # Selecting a missing field is an error, not null (exit 1)
  admitc cel 'object.spec.containers[0].securityContext.privileged' --object examples/manifests/good.json

  # Guard with has()
  admitc cel 'object.spec.containers.all(c, !has(c.securityContext) || !c.securityContext.privileged)' --object examples/manifests/good.json

  # The API server's defaults are applied: IfNotPresent for a tagged image
  admitc cel 'object.spec.containers[0].imagePullPolicy' --object examples/manifests/tag-only.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Expression = args[0]
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Object, "object", "", "file holding the object (required)")
	f.StringVar(&o.Old, "old", "", "file holding oldObject (makes the request an UPDATE)")
	f.StringVar(&o.Params, "params", "", "file holding the params object")
	f.StringVarP(&o.Namespace, "namespace", "n", "default", "namespace of the request")
	o.Cluster.add(f)
	_ = cmd.MarkFlagRequired("object")
	return cmd
}

func readOne(what, path string) (*unstructured.Unstructured, error) {
	if path == "" {
		return nil, nil
	}
	ms, err := runtime.ReadManifests([]string{path})
	if err != nil {
		return nil, usageError(fmt.Errorf("read %s: %w", what, err))
	}
	if len(ms) != 1 {
		return nil, usageError(fmt.Errorf("%s must hold exactly one object, found %d", what, len(ms)))
	}
	return ms[0].Object, nil
}

// request reads the files into the request the expression is evaluated on.
func (o *CELOptions) request() (*runtime.Request, error) {
	if err := o.Cluster.complete(); err != nil {
		return nil, err
	}
	obj, err := o.defaulted("--object", o.Object)
	if err != nil {
		return nil, err
	}
	old, err := o.defaulted("--old", o.Old)
	if err != nil {
		return nil, err
	}
	params, err := readOne("--params", o.Params)
	if err != nil {
		return nil, err
	}
	req := runtime.RequestFor(obj, old, o.Namespace)
	if params != nil {
		req.Params = []*unstructured.Unstructured{params}
	}
	req.NamespaceLabels = o.Cluster.labelsOf(req.Namespace)
	return req, nil
}

// defaulted reads the object of flag and applies the API server's defaults.
func (o *CELOptions) defaulted(flag, path string) (*unstructured.Unstructured, error) {
	obj, err := readOne(flag, path)
	if err != nil {
		return nil, err
	}
	return o.Cluster.object(flag, obj)
}

// Run evaluates the expression and prints its value.
func (o *CELOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	req, err := o.request()
	if err != nil {
		return err
	}
	val, err := runtime.EvalExpression(ctx, o.Expression, req)
	var compileErr *runtime.CompileError
	var evalErr *runtime.EvalError
	switch {
	case errors.As(err, &compileErr):
		fmt.Fprintln(o.Err, compileErr.Detail)
		return &ExitError{Code: ExitUsage}
	case errors.As(err, &evalErr):
		fmt.Fprintln(o.Err, "error: "+evalErr.Message)
		return failed
	case err != nil:
		return usageError(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, val, "", "  "); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, pretty.String())
	return nil
}
