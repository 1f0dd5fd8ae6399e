package audit

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
)

// Lister reads the stored objects of one resource, calling fn for each in
// the API server's order (by namespace, then name); fn's error stops it.
type Lister interface {
	List(ctx context.Context, t Target, fn func(*unstructured.Unstructured) error) error
}

// DefaultPageSize is how many objects one LIST asks for. Three pages are
// held at most (one judged, one buffered, one read); a page of 500 pods
// decodes to tens of MB, 100 keeps that small at 200 LISTs per 20,000
// objects (measured: 391 against 440 MiB peak RSS on 5,000 pods, same
// rate).
const DefaultPageSize = 100

// PagedLister lists through the dynamic client with paginated LISTs
// (limit and continue), with client-go's pager: one page is judged while
// the next is read, so at most a few pages are held however many objects
// the resource has.
type PagedLister struct {
	Client dynamic.Interface
	// PageSize is the limit of each LIST (0: DefaultPageSize).
	PageSize int64
}

var _ Lister = PagedLister{}

// List implements Lister. A LIST whose continue token expired (the
// listing outlived the API server's compaction window) is an error: the
// pager's fallback to one unpaginated LIST would hold every object at once.
func (l PagedLister) List(ctx context.Context, t Target, fn func(*unstructured.Unstructured) error) error {
	ri := l.Client.Resource(t.Resource)
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (k8sruntime.Object, error) {
		return ri.List(ctx, opts)
	}))
	p.PageSize = l.PageSize
	if p.PageSize <= 0 {
		p.PageSize = DefaultPageSize
	}
	p.PageBufferSize = 1
	p.FullListIfExpired = false
	return p.EachListItemWithAlloc(ctx, metav1.ListOptions{}, func(obj k8sruntime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: got %T, want an unstructured object", t, obj)
		}
		return fn(u)
	})
}
