package static

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// MinKubeVersion is the first release that loads static admission manifests
// (ManifestBasedAdmissionControlConfig: alpha in 1.36, beta and on by
// default in 1.37). It is also the first to serve MutatingAdmissionPolicy in
// admissionregistration.k8s.io/v1, the only version the loader accepts.
var MinKubeVersion = version.MajorMinor(1, 36)

// Backend is the static manifests backend. Validating, Mutating and Webhook
// build the objects (the vap, map and webhook backends); Backend lays them
// out for kube-apiserver's loader.
type Backend struct {
	Validating, Mutating, Webhook backends.Backend
}

var _ backends.Backend = Backend{}

// Name implements backends.Backend.
func (Backend) Name() string { return "static" }

// Rejects implements backends.Backend: a policy goes to the backend of its
// kind. What only static manifests refuse (parameters) depends on
// --static-webhook and is reported by Generate.
func (b Backend) Rejects(p *ir.Policy) string {
	if p.Kind == ir.Mutating {
		return b.Mutating.Rejects(p)
	}
	return b.Validating.Rejects(p)
}

// Generate implements backends.Backend: the AdmissionConfiguration first,
// then one manifests file per plugin directory (empty when the plugin has
// nothing to load, so a stale file is removed and the configuration does
// not name the plugin).
func (b Backend) Generate(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	if diags := check(set, opts); len(diags) > 0 {
		return backends.Output{}, diags
	}
	out, diags := b.objects(set, opts)
	if len(diags) > 0 {
		return backends.Output{}, diags
	}
	byDir, err := place(out.Objects)
	if err != nil {
		return backends.Output{}, diag.Diagnostics{{Message: err.Error()}}
	}
	cfg, err := configuration(opts.Static.Root, byDir)
	if err != nil {
		return backends.Output{}, diag.Diagnostics{{Message: err.Error()}}
	}
	files := []backends.OutputFile{cfg}
	for _, p := range Plugins {
		files = append(files, backends.OutputFile{Path: path.Join(p.Dir, ManifestsFile), Objects: byDir[p.Dir]})
	}
	return backends.Output{Files: files}, nil
}

// objects runs the backends that build the objects: the webhook with
// --static-webhook, else vap and map.
func (b Backend) objects(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	if opts.Static.Webhooks {
		var diags diag.Diagnostics
		for i := range set.Policies {
			if why := b.Webhook.Rejects(&set.Policies[i]); why != "" {
				diags = append(diags, backends.Errorf(set.Policies[i].Origin, "policy %q cannot go to a static webhook: %s", set.Policies[i].Name, why))
			}
		}
		if len(diags) > 0 {
			return backends.Output{}, diags
		}
		return b.Webhook.Generate(set, opts)
	}
	vap, diags := b.Validating.Generate(set, opts)
	mp, mdiags := b.Mutating.Generate(set, opts)
	return backends.Output{Objects: append(vap.Objects, mp.Objects...)}, append(diags, mdiags...)
}

// check refuses, before anything is built, what kube-apiserver would
// refuse to load: an old release, a relative root, parameters (a static
// policy is loaded before any parameter object exists and cannot name one),
// and webhooks addressed by Service; and a root with a control character
// (a newline), which names a directory nobody means.
func check(set *ir.PolicySet, opts backends.Options) diag.Diagnostics {
	if opts.KubeVersion != nil && opts.KubeVersion.LessThan(MinKubeVersion) {
		return diag.Diagnostics{{Message: fmt.Sprintf("static admission manifests need Kubernetes %s or newer, --kube-version is %s: "+
			"kube-apiserver loads them from 1.36 (feature gate ManifestBasedAdmissionControlConfig, on by default from 1.37) "+
			"and only in admissionregistration.k8s.io/v1, which MutatingAdmissionPolicy reached in 1.36", MinKubeVersion, opts.KubeVersion)}}
	}
	if i := strings.IndexFunc(opts.Static.Root, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(opts.Static.Root[i:])
		return diag.Diagnostics{{Message: fmt.Sprintf("--static-root %q holds the control character %q: kube-apiserver would look for a directory whose name has it; give the path without it", opts.Static.Root, r)}}
	}
	if !path.IsAbs(opts.Static.Root) {
		return diag.Diagnostics{{Message: fmt.Sprintf("--static-root %q must be an absolute path: kube-apiserver refuses a staticManifestsDir that is not (\"must be an absolute file path\")", opts.Static.Root)}}
	}
	if opts.Static.Webhooks {
		if opts.Webhook.URL == "" {
			return diag.Diagnostics{{Message: "--static-webhook needs --url: kube-apiserver refuses clientConfig.service in static webhook configurations (it loads them before any Service exists)"}}
		}
		return nil
	}
	var diags diag.Diagnostics
	for i := range set.Policies {
		diags = append(diags, params(&set.Policies[i])...)
	}
	return diags
}

// params refuses a policy's paramKind and its bindings' paramRefs.
func params(p *ir.Policy) diag.Diagnostics {
	var diags diag.Diagnostics
	if p.ParamKind != nil {
		diags = append(diags, backends.Errorf(p.Origin, "policy %q has a paramKind: kube-apiserver refuses spec.paramKind in static manifests "+
			"(a static policy is loaded before any parameter object exists); write the values into the policy, or leave it to --backend vap/map", p.Name))
	}
	if p.ParamRef != nil && p.ParamKind == nil {
		diags = append(diags, backends.Errorf(p.Origin, "policy %q has a paramRef: kube-apiserver refuses spec.paramRef in static bindings", p.Name))
	}
	for _, b := range p.Bindings {
		if b.ParamRef != nil {
			diags = append(diags, backends.Errorf(b.Origin, "binding %q of policy %q has a paramRef: kube-apiserver refuses spec.paramRef in static bindings", b.Name, p.Name))
		}
	}
	return diags
}
