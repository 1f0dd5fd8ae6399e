package conditions

import (
	"slices"
	"strings"

	"github.com/distribution/reference"
)

// ImagesVariable names the policy variable holding Kyverno's images
// variable; a translation whose CEL reads ImagesReference needs it, with
// ImagesExpression as its expression.
const ImagesVariable = "kyvernoImages"

// ImagesReference is the CEL that reads ImagesVariable.
const ImagesReference = "variables." + ImagesVariable

// UsesImages says whether a translated expression reads ImagesVariable.
func UsesImages(cel string) bool { return strings.Contains(cel, ImagesReference) }

// imageError is the value ImagesExpression gives when Kyverno fails to
// extract the images (bytes, which no JSON value is).
const imageError = "dyn(b'kyverno: invalid image')"

// podSpecPaths are Kyverno's registered image extractors
// (pkg/utils/api/image.go): where each kind keeps its pod spec.
var podSpecPaths = []struct {
	kinds []string
	path  []string
}{
	{[]string{"Pod"}, []string{"spec"}},
	{[]string{"DaemonSet", "Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "Job"}, []string{"spec", "template", "spec"}},
	{[]string{"CronJob"}, []string{"spec", "jobTemplate", "spec", "template", "spec"}},
}

// PodSpecPath is where Kyverno's image extractors read the pod spec of
// kind (nil: Kyverno extracts no image from it).
func PodSpecPath(kind string) []string {
	for _, p := range podSpecPaths {
		if slices.Contains(p.kinds, kind) {
			return p.path
		}
	}
	return nil
}

// ImagesExpression is Kyverno's images variable as CEL, computed as
// Kyverno's ExtractImagesFromResource and GetImageInfo compute it from the
// admission request's object (null on DELETE, as Kyverno's context has no
// new resource then), with Kyverno's default configuration (default
// registry docker.io, default registry mutation on): a map from
// initContainers, containers and ephemeralContainers (each present only
// when it has an image) to a map from container name to the image's
// registry, path, name, tag, digest, reference, referenceWithTag and
// jsonPointer (empty ones omitted, as Kyverno's JSON does); null when the
// object has no image, so Kyverno's context has no images; and the bytes
// imageError when Kyverno's extraction fails (a container without a
// string name, an image reference that does not parse, a pod spec or a
// container list of the wrong type).
func ImagesExpression() string {
	// The pod spec and the JSON pointer to it, by kind: [spec, pointer],
	// null when the kind has no extractor or the path ends early.
	spec, pointer := "null", "''"
	for i := len(podSpecPaths) - 1; i >= 0; i-- {
		p := podSpecPaths[i]
		cur := "img_o"
		for _, f := range p.path {
			cur = bind("img_s", cur, "img_s == null || type(img_s) == bytes ? img_s : type(img_s) != map ? "+imageError+" : "+quote(f)+" in img_s ? img_s["+quote(f)+"] : null")
		}
		kinds := make([]string, len(p.kinds))
		for j, k := range p.kinds {
			kinds[j] = quote(k)
		}
		in := "img_k in [" + strings.Join(kinds, ", ") + "]"
		spec = in + " ? (" + cur + ") : " + spec
		pointer = in + " ? " + quote("/"+strings.Join(p.path, "/")) + " : " + pointer
	}
	var lists []string
	for _, tag := range []string{"initContainers", "containers", "ephemeralContainers"} {
		lists = append(lists, "[dyn("+quote(tag)+"), dyn("+containerImages(tag)+")]")
	}
	// Each list's entries [name, image, pointer] become [name, info]; the
	// images are imageError when one entry is an error.
	infos := "img_ls.transformList(i, l, [l[0], type(l[1]) == bytes ? l[1] : l[1].transformList(j, e, [e[0], type(e[1]) == bytes ? e[1] : " + imageInfo("string(e[1])", "e[2]") + "])])"
	images := bind("img_ls", infos,
		"(img_ls.exists(l, type(l[1]) == bytes || l[1].exists(e, type(e[1]) == bytes)) ? "+imageError+
			" : img_ls.exists(l, size(l[1]) > 0) ? dyn(img_ls.transformMapEntry(i, l, size(l[1]) > 0, {l[0]: "+
			"l[1].transformMapEntry(j, e, !l[1].exists(m, n, m > j && n[0] == e[0]), {e[0]: e[1]})})) : null)")
	return bind("img_o", "object",
		"(img_o == null || type(img_o) != map ? null : "+
			bind("img_k", "('kind' in img_o && type(img_o.kind) == string ? img_o.kind : '')",
				bind("img_p", "dyn("+spec+")", bind("img_pp", pointer,
					"(img_p == null ? null : type(img_p) != map ? "+imageError+" : "+
						bind("img_ls", "["+strings.Join(lists, ", ")+"]", images)+")")))+")")
}

// containerImages is the entries of one container list of the pod spec
// img_p (pointer img_pp): a list of [name, image, pointer] (the
// image b” when the container's name is not a string), or imageError
// when the list is neither null, a list nor a map. Kyverno also reads
// the containers of lists nested in the list; admitc reads one level of
// nesting.
func containerImages(tag string) string {
	l := "img_p[" + quote(tag) + "]"
	base := "img_pp + " + quote("/"+tag+"/")
	return "(!(" + quote(tag) + " in img_p) || " + l + " == null ? [] : type(" + l + ") == list ? " +
		l + ".transformList(i, c, type(c) == map ? " + imageEntry("c", base+" + string(i)") +
		" : type(c) == list ? c.transformList(j, d, type(d) == map ? " + imageEntry("d", base+" + string(i) + '/' + string(j)") + " : []).flatten() : []).flatten()" +
		" : type(" + l + ") == map ? " + l + ".transformList(k, c, type(c) == map ? " + imageEntry("c", base+" + k") +
		" : type(c) == list ? [[dyn(''), " + imageError + ", dyn('')]] : []).flatten() : " + imageError + ")"
}

// imageEntry is the entries (none or one) of the container c at pointer
// ptr: Kyverno requires a string name, then skips a container whose image
// is not a non-blank string.
func imageEntry(c, ptr string) string {
	return "(!('name' in " + c + ") || type(" + c + ".name) != string ? [[dyn(''), " + imageError + ", dyn('')]] : " +
		"'image' in " + c + " && type(" + c + ".image) == string && " + c + ".image.trim() != '' ? [[" + c + ".name, " + c + ".image, dyn(" + ptr + " + '/image')]] : [])"
}

// ReferenceKnownDigest is distribution's reference grammar with its
// digest narrowed to the digests Kyverno knows (go-digest's Validate: an
// algorithm it has, the encoded form of its length, lower-case hex).
var ReferenceKnownDigest = func() string {
	grammar, digest := reference.ReferenceRegexp.String(), reference.DigestRegexp.String()
	if strings.Count(grammar, digest) != 1 {
		panic("distribution's reference grammar no longer holds its digest grammar once")
	}
	return strings.Replace(grammar, digest, `sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128}`, 1)
}()

// imageInfo is GetImageInfo of the image reference img as Kyverno's
// default configuration computes it, with the jsonPointer ptr, or
// imageError when distribution's reference.Parse refuses the reference.
func imageInfo(img, ptr string) string {
	domain := quote("^(?:" + reference.DomainRegexp.String() + ")$")
	// addDefaultRegistry: docker.io/ unless the first component looks
	// like a registry (a dot, a colon, localhost, an upper-case letter).
	full := bind("img_i", img, "(img_i.indexOf('/') == -1 || "+
		bind("img_f", "img_i.substring(0, img_i.indexOf('/'))", "!img_f.contains('.') && !img_f.contains(':') && img_f != 'localhost' && img_f.lowerAscii() == img_f")+
		" ? 'docker.io/' + img_i : img_i)")
	fields := "[['registry', img_rg], ['name', img_nm.substring(img_nm.lastIndexOf('/') + 1)], ['path', img_pa], ['tag', img_tg], ['digest', img_d], " +
		"['reference', (img_r0 != '' ? img_r0 + '/' + img_p0 : img_p0) + (img_d != '' ? '@' + img_d : ':' + img_tg)], " +
		"['referenceWithTag', (img_r0 != '' ? img_r0 + '/' : '') + img_p0 + ':' + img_tg], ['jsonPointer', string(" + ptr + ")]]" +
		".transformMapEntry(img_fi, img_fe, img_fe[1] != '' || img_fe[0] in ['name', 'path', 'jsonPointer'], {img_fe[0]: img_fe[1]})"
	// Kyverno moves a first path component with an underscore into the
	// registry when the reference has none, after the references are made.
	underscore := bind("img_parts", "img_p0.split('/')",
		bind("img_rg", "size(img_parts) > 1 && img_r0 == '' && img_parts[0].contains('_') ? img_parts[0] : img_r0",
			bind("img_pa", "size(img_parts) > 1 && img_r0 == '' && img_parts[0].contains('_') ? img_parts.slice(1, size(img_parts)).join('/') : img_p0", fields)))
	parsed := bind("img_d", "img_full.indexOf('@') >= 0 ? img_full.substring(img_full.indexOf('@') + 1) : ''",
		bind("img_nt", "img_full.indexOf('@') >= 0 ? img_full.substring(0, img_full.indexOf('@')) : img_full",
			bind("img_c", "img_nt.lastIndexOf(':') > img_nt.lastIndexOf('/') ? img_nt.lastIndexOf(':') : -1",
				bind("img_nm", "img_c >= 0 ? img_nt.substring(0, img_c) : img_nt",
					"("+
						bind("img_r0", "img_nm.substring(0, img_nm.indexOf('/')).matches("+domain+") ? img_nm.substring(0, img_nm.indexOf('/')) : ''",
							bind("img_p0", "img_r0 != '' ? img_nm.substring(size(img_r0) + 1) : img_nm",
								"(size(img_p0) > 255 ? "+imageError+" : "+bind("img_tg", "img_c >= 0 ? img_nt.substring(img_c + 1) : img_d == '' ? 'latest' : ''", underscore)+")"))+")"))))
	return bind("img_full", full, "(!img_full.matches("+quote(ReferenceKnownDigest)+") ? "+imageError+" : dyn("+parsed+"))")
}
