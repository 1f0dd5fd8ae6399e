package typed

import (
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"
	gojmespath "github.com/kyverno/go-jmespath"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// Kyverno's images variable read against the schema. Kyverno extracts,
// from the pod spec of the object's kind, a map per container list
// (initContainers, containers, ephemeralContainers) from each container's
// name to its image reference parsed (registry, name, tag, digest, ...),
// skipping blank images; the whole variable fails when one reference does
// not parse, and is missing (null in a projection) when there is no image,
// on DELETE among others.
// compiler/kyverno/conditions/images.go is that computation for objects of
// any shape, checked against Kyverno's own. Here a query such as
// images.containers.*.tag becomes a comprehension over the pod spec's
// containers, each reference's part read with string functions, under one
// policy variable (ImagesParseVariable) that holds when Kyverno reads the
// images and fails where Kyverno fails.

// ImageLists are the container lists of a pod spec, in Kyverno's order.
var ImageLists = []string{"initContainers", "containers", "ephemeralContainers"}

// ImagesVariable names the policy variable holding the pod's non-blank
// image references, and ImagesParseVariable the one that is true when
// they parse and there is one, and fails otherwise, as Kyverno's images
// variable does.
const (
	ImagesVariable      = "images"
	ImagesParseVariable = "imagesParse"
)

// Images is what Kyverno's images variable reads: the pod spec of the
// object's kind.
type Images struct {
	// Spec is the pod spec; Node its schema; Path its schema path
	// ("spec", "spec.template.spec").
	Spec celbuild.Expr
	Node kubeschema.Node
	Path string
}

// registryLike matches a reference whose first component is a registry
// as Kyverno's default-registry rule reads it: one with a dot, a port or
// an upper-case letter, or localhost.
const registryLike = `^([^/]*[.:A-Z][^/]*|localhost)/`

// imageParts are the parts of a parsed reference the typed translation
// reads, as CEL over the reference x (valid: it parses), and whether
// Kyverno omits the part when it is empty.
var imageParts = map[string]struct {
	cel       string
	omitEmpty bool
}{
	// The tag: after the last ':' that follows the last '/' of the name
	// (the part before '@'); "latest" when there is neither a tag nor a
	// digest.
	"tag":    {cel: `x.split('@')[0].lastIndexOf(':') > x.split('@')[0].lastIndexOf('/') ? x.split('@')[0].substring(x.split('@')[0].lastIndexOf(':') + 1) : x.contains('@') ? '' : 'latest'`, omitEmpty: true},
	"digest": {cel: `x.contains('@') ? x.substring(x.indexOf('@') + 1) : ''`, omitEmpty: true},
	// The registry: the first component when it looks like one (a dot, a
	// port, localhost, an upper-case letter), else Kyverno's default.
	"registry": {cel: `x.matches('` + registryLike + `') ? x.substring(0, x.indexOf('/')) : 'docker.io'`},
	// The name: the last component of the name, without its tag.
	"name": {cel: `x.split('@')[0].split('/')[size(x.split('@')[0].split('/')) - 1].split(':')[0]`},
}

// imageParses is CEL over the reference x that holds when distribution's
// reference.Parse takes it as Kyverno's GetImageInfo gives it (with
// docker.io/ in front where the first component is not a registry, which
// changes no match), its digest is one Kyverno knows, and its path (the
// name without the registry) is at most 255 characters.
func imageParses() string {
	domain := `^(?:` + reference.DomainRegexp.String() + `)$`
	first := `x.substring(0, x.indexOf('/'))`
	nt := `x.split('@')[0]`
	// The name without its tag, and the registry's share of it.
	name := nt + `.lastIndexOf(':') > ` + nt + `.lastIndexOf('/') ? ` + nt + `.substring(0, ` + nt + `.lastIndexOf(':')) : ` + nt
	registry := `x.matches('` + registryLike + `') && ` + first + `.matches(` + celenv.Quote(domain) + `) ? size(` + first + `) + 1 : 0`
	return `x.matches(` + celenv.Quote(conditions.ReferenceKnownDigest) + `) && ` +
		`(size(` + nt + `) <= 255 || size(` + name + `) - (` + registry + `) <= 255)`
}

// ImagesVariables are ImagesVariable's and ImagesParseVariable's
// expressions: the non-blank references of the pod spec's three lists,
// and that they parse, or a failure. It records the
// reads they assume: each list a list of containers, each with a string
// name (unique in its list, as the API server's validation requires) and
// maybe a string image.
func (t *Translator) ImagesVariables(images *Images) (refs, parse celbuild.Expr, err error) {
	var lists []string
	steps := strings.Split(images.Path, ".")
	for i := range steps {
		t.read(strings.Join(steps[:i+1], "."), kubeschema.Object.String(), true)
	}
	for _, l := range ImageLists {
		n, ok := images.Node.Field(l)
		if !ok || n.Shape() != kubeschema.List {
			return nil, nil, notTyped("the pod spec's %s is not a list in the schema", l)
		}
		lp := ir.SchemaPath(images.Path, l)
		always := images.Node.AlwaysPresent(l)
		t.read(lp, kubeschema.List.String(), always)
		t.readUnique(lp, "name")
		t.read(lp+"[]", kubeschema.Object.String(), false)
		t.read(ir.SchemaPath(lp+"[]", "name"), kubeschema.String.String(), true)
		image := n.Items().AlwaysPresent("image")
		t.read(ir.SchemaPath(lp+"[]", "image"), kubeschema.String.String(), image)
		src := "s." + l
		if !always {
			src = "s.?" + l + ".orValue([])"
		}
		keep := "c.image.trim() != ''"
		if !image {
			keep = "has(c.image) && " + keep
		}
		lists = append(lists, src+".map(c, "+keep+", c.image)")
	}
	if refs, err = t.b.Parse(strings.Join(lists, " + ")); err != nil {
		return nil, nil, notTyped("the images: %v", err)
	}
	refs = t.b.Substitute(refs, "s", images.Spec)
	text := "variables." + ImagesVariable + ".all(x, " + imageParses() + ") || {}['Kyverno cannot read the images of this object: an image reference does not parse']"
	if parse, err = t.b.Parse(text); err != nil {
		return nil, nil, notTyped("the images check: %v", err)
	}
	return refs, parse, nil
}

// readUnique records that the list at path holds elements whose key
// values are distinct.
func (t *Translator) readUnique(path, key string) {
	r := t.reads[path]
	r.UniqueKey = key
	t.reads[path] = r
}

// ReadsImages says whether a translation since the last call read
// Kyverno's images variable, and forgets it.
func (t *Translator) ReadsImages() bool {
	r := t.readsImages
	t.readsImages = false
	return r
}

// imagesParse is the read of ImagesParseVariable.
func (t *Translator) imagesParse() celbuild.Expr {
	return t.b.Select(t.b.Ident("variables"), ImagesParseVariable)
}

// imagesField is a key of the images variable or of one of its lists.
func (q *query) imagesField(pseudo, key string) (qval, error) {
	if pseudo == "images" && slices.Contains(ImageLists, key) {
		return qval{kind: qPseudo, pseudo: "images." + key}, nil
	}
	if list, ok := strings.CutPrefix(pseudo, "images."); ok && key == elementNameKey {
		return q.elementImage(list)
	}
	if list, ok := strings.CutPrefix(pseudo, "element-image."); ok {
		return q.elementImagePart(list, key)
	}
	return qval{}, q.refuse("%s.%s is not read by the typed translation (images.<list>.*.<part>)", pseudo, key)
}

// imagesCount is length(images.<list>): the number of the list's
// containers with an image (their names are unique), which fails where
// there is none, as length() of Kyverno's missing list does.
func (q *query) imagesCount(list string) (qval, error) {
	lp, err := q.imagesList(list)
	if err != nil {
		return qval{}, err
	}
	name := q.fresh("c")
	count := q.b.Size(q.b.Filter(optionalList(q.b, lp), name, nonBlankImage(q.b, q.b.Ident(name), lp.final().Items())))
	fail, err := q.b.Parse("{}['length() of an images list Kyverno does not have: no container of it has an image']")
	if err != nil {
		return qval{}, q.refuse("%v", err)
	}
	return qval{kind: qScalar, scalar: &qscalar{expr: q.b.Ternary(q.b.Compare(">", count, q.b.Int(0)), count, fail), shape: kubeschema.Integer, mayErr: true}}, nil
}

// imagesList is the pod spec's container list, its reads recorded.
func (q *query) imagesList(list string) (*qpath, error) {
	im := q.roots.Images
	lv, err := q.field(qval{kind: qPath, path: &qpath{root: im.Spec, node: im.Node, rp: im.Path}}, list, false)
	if err != nil {
		return nil, err
	}
	if lv.kind != qPath || lv.path.shape() != kubeschema.List {
		return nil, q.refuse("the pod spec's %s is not a list in the schema", list)
	}
	return lv.path, nil
}

// nonBlankImage says the container c, of schema items, has an image that
// is not blank (the API server's validation requires one, written
// without blanks around it; the reads of ImagesVariables say offline).
func nonBlankImage(b *celbuild.Builder, c celbuild.Expr, items kubeschema.Node) celbuild.Expr {
	blank := b.Ne(b.Member("trim", b.Select(c, "image")), b.String(""))
	if items.AlwaysPresent("image") {
		return blank
	}
	return b.And(b.Has(c, "image"), blank)
}

// elementNameKey stands, in a query, for the nested variable {{
// element.name }} as a key (ElementName).
const elementNameKey = "__admitc_element_name__"

// nestedElementName matches a nested {{ element.name }} used as a quoted
// key (a bare one does not parse where the name holds a '-').
var nestedElementName = regexp.MustCompile(`"\{\{\s*element\.name\s*\}\}"`)

// ElementName is a key text with a nested {{ element.name }} variable
// as a key of images.<list> (images.containers."{{ element.name }}".tag)
// written with elementNameKey, when roots has an element; else the text.
func ElementName(text string, roots Roots) string {
	if roots.Element == nil || strings.Count(text, "{{") != 2 || !strings.HasPrefix(strings.TrimSpace(text), "{{") {
		return text
	}
	out := nestedElementName.ReplaceAllString(text, elementNameKey)
	if strings.Count(out, "{{") != 1 {
		return text
	}
	return out
}

// elementImage is images.<list>."{{ element.name }}": the image of the
// foreach element, which must be a container of that list (names are
// unique in a list, so the element's own entry).
func (q *query) elementImage(list string) (qval, error) {
	im, el := q.roots.Images, q.roots.Element
	want := ir.SchemaPath(im.Path, list) + "[]"
	if el == nil || el.Path != want && !slices.Contains(el.Aliases, want) {
		return qval{}, q.refuse("images.%s.\"{{ element.name }}\" where the element is not a container of %s", list, list)
	}
	return qval{kind: qPseudo, pseudo: "element-image." + list}, nil
}

// elementImagePart is a part of the foreach element's image: null where
// the element has no image (Kyverno's map has no entry for it).
func (q *query) elementImagePart(list, key string) (qval, error) {
	part, ok := imageParts[key]
	if !ok {
		return qval{}, q.refuse("the %s of an image (the typed translation reads its registry, name, tag and digest)", key)
	}
	el := q.roots.Element
	ep := &qpath{root: el.Expr, node: el.Node, rp: el.Path, aliases: el.Aliases, known: el.Known}
	if _, err := q.field(qval{kind: qPath, path: ep}, "image", false); err != nil {
		return qval{}, err
	}
	q.read(ep, "name", kubeschema.String.String(), true, nil)
	tmpl, err := q.b.Parse(part.cel)
	if err != nil {
		return qval{}, q.refuse("the %s of an image: %v", key, err)
	}
	value := q.b.Substitute(tmpl, "x", q.b.Select(el.Expr, "image"))
	null := q.b.Not(nonBlankImage(q.b, el.Expr, el.Node))
	if q.roots.OldElements {
		// The object's container of the old element's name.
		lp, err := q.imagesList(list)
		if err != nil {
			return qval{}, err
		}
		name := q.fresh("c")
		c := q.b.Ident(name)
		same := q.b.And(q.b.Eq(q.b.Select(c, "name"), q.b.Select(el.Expr, "name")), nonBlankImage(q.b, c, lp.final().Items()))
		src := optionalList(q.b, lp)
		value = q.b.Index(q.b.Map(q.b.Filter(src, name, same), name, q.b.Substitute(tmpl, "x", q.b.Select(c, "image"))), q.b.Int(0))
		null = q.b.Not(q.b.Exists(src, name, same))
	}
	// (A part Kyverno omits when empty is null there too: `|| literal`,
	// the only reader of a qMaybe, takes "" as it takes null.)
	return qval{kind: qMaybe, scalar: &qscalar{expr: value, shape: kubeschema.String, plain: true, null: null}}, nil
}

// valueProjection is ASTValueProjection: images.<list>.* projected onto a
// part of each reference.
func (q *query) valueProjection(n gojmespath.ASTNode, cur qval) (qval, error) {
	left, err := q.node(n.Children[0], cur, false)
	if err != nil || left.kind == qNull {
		return left, err
	}
	list, ok := strings.CutPrefix(left.pseudo, "images.")
	if left.kind != qPseudo || !ok {
		return qval{}, q.refuse("a projection of an object's values other than images.<list>.*")
	}
	if n.Children[1].NodeType != gojmespath.ASTField {
		return qval{}, q.refuse("images.%s.* projected onto something other than a part of the reference", list)
	}
	partName := n.Children[1].Value.(string)
	part, ok := imageParts[partName]
	if !ok {
		return qval{}, q.refuse("the %s of an image (the typed translation reads its registry, name, tag and digest)", partName)
	}
	lp, err := q.imagesList(list)
	if err != nil {
		return qval{}, err
	}
	name := q.fresh("c")
	c := q.b.Ident(name)
	image := q.b.Select(c, "image")
	nonBlank := nonBlankImage(q.b, c, lp.final().Items())
	tmpl, err := q.b.Parse(part.cel)
	if err != nil {
		return qval{}, q.refuse("the %s of an image: %v", partName, err)
	}
	value := q.b.Substitute(tmpl, "x", image)
	filter := nonBlank
	var loose celbuild.Expr
	if part.omitEmpty {
		filter, loose = q.b.And(filter, q.b.Ne(value, q.b.String(""))), nonBlank
	}
	opt := optionalList(q.b, lp)
	// The list is null (images.<list> is missing) when no container of
	// the list has an image.
	null := q.b.Not(q.b.Exists(opt, name, nonBlank))
	return qval{kind: qList, list: &qlist{
		gens:   []qgen{{src: opt, v: name, filter: filter}},
		elem:   qval{kind: qScalar, scalar: &qscalar{expr: value, shape: kubeschema.String, plain: true}},
		null:   null,
		optSrc: opt,
		loose:  loose,
		kept:   true,
	}}, nil
}

// Builder is the builder the translator writes with.
func (t *Translator) Builder() *celbuild.Builder { return t.b }
