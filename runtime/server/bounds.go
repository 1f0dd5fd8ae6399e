package server

import (
	"fmt"
	"net/http"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultMaxListItems is the longest list of an object admitted for
// evaluation by default. The CEL cost budget the API server gives a policy
// (celconfig.RuntimeCELCostBudget) does not bound evaluation time: cel-go's
// runtime cost tracker searches a stack that grows with every element a
// comprehension visits, so the time of `list.map(c, c.name)` grows with the
// square of the list's length while its cost grows linearly. A pod of 40,000
// containers stays well within budget and takes many seconds per policy.
// Kubernetes caps its own largest lists at 1,000 (an EndpointSlice's
// endpoints); real pods have tens of containers, volumes or variables.
const DefaultMaxListItems = 1000

// checkListSizes refuses an object with a list longer than limit, naming
// the list, before any policy walks it.
func checkListSizes(obj map[string]any, path *field.Path, limit int) error {
	for _, k := range sortedKeys(obj) {
		if err := checkValue(obj[k], path.Child(k), limit); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(v any, path *field.Path, limit int) error {
	switch v := v.(type) {
	case map[string]any:
		return checkListSizes(v, path, limit)
	case []any:
		if len(v) > limit {
			return &httpError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf(
				"%s has %d items, more than the %d admitc evaluates (--max-list-items): policy evaluation time grows with the square of a list's length",
				path, len(v), limit)}
		}
		for i, item := range v {
			if err := checkValue(item, path.Index(i), limit); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
