package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

func TestSmoke(t *testing.T) {
	src, err := compiler.ReadSources([]string{"../examples/policies/policies.json"})
	if err != nil {
		t.Fatal(err)
	}
	set, diags := compiler.Compile(src, compiler.Options{})
	if diags != nil {
		t.Fatal(diags.Error())
	}
	e, err := runtime.NewEngine(set)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := runtime.ReadManifests([]string{"../examples/manifests", "../examples/more"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		res, err := e.Admit(context.Background(), runtime.RequestFor(m.Object, nil, "default"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Violations)
		fmt.Println(m.Source, res.Allowed(), string(b))
	}
}
