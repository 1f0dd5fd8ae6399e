package kyverno

import (
	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// libraryReasons say why admitc cannot evaluate a call of one of Kyverno's
// libraries that read outside the admission request.
var libraryReasons = map[celenv.Library]string{
	celenv.LibraryHTTP:      "Kyverno's http library makes HTTP requests at admission; admitc makes none (and no admission policy can): keep this policy under Kyverno",
	celenv.LibraryImageData: "Kyverno's image data library (image.GetMetadata) reads image manifests from registries at admission; admitc reads no registry: keep this policy under Kyverno",
}

// libraryRefusal names the first call of p's CEL to a library that reads
// what admitc cannot: HTTP or registries. The resource and globalContext
// libraries read the cluster state (files in admitc test and verify,
// informers in admitc serve). Kyverno's libraries that compute from their
// arguments alone (image(), parseImageReference(), parseServiceAccount(),
// time, hash, json, yaml, x509, math, transform, gzip, random) are
// evaluated by the runtime in Kyverno's own environment.
func libraryRefusal(p *ir.Policy) *refusal {
	for _, u := range celenv.LibraryUses(p) {
		if why, refused := libraryReasons[u.Library]; refused {
			return &refusal{"CEL library " + string(u.Library), u.Origin.Path, why}
		}
	}
	return nil
}
