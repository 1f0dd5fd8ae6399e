package twins_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/twins"
	"github.com/admitc/admitc/runtime"
)

const examples = "../../examples"

// knownDifferences are the fixture resources on which a twin decides
// otherwise than the original, by "FIXTURE KIND/NAMESPACE/NAME", with why.
// Each is also a line of examples/twins/README.md.
var knownDifferences = map[string]string{}

// Every twin decides every resource of its fixture's Kyverno test as
// admitc's translation of the original ClusterPolicy does (allowed,
// denied, or admitted with audit violations), on admitc's runtime, but
// for the known differences.
func TestTwinsDecideAsTheOriginals(t *testing.T) {
	fixtures, err := twins.Fixtures(examples)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range fixtures {
		t.Run(f.Name, func(t *testing.T) {
			original, twin := engine(t, f.Original), engine(t, f.Twin)
			require.NotEmpty(t, f.Resources)
			denied := 0
			for _, o := range f.Resources {
				name := twins.ResourceName(o)
				want, err := twins.Decide(context.Background(), original, o, f.Params)
				require.NoError(t, err, name)
				got, err := twins.Decide(context.Background(), twin, o, f.Params)
				require.NoError(t, err, name)
				if want.Verdict == twins.Denied {
					denied++
				}
				key := f.Name + " " + name
				if why, ok := knownDifferences[key]; ok {
					seen[key] = true
					assert.NotEqual(t, want.Verdict, got.Verdict, "%s is a known difference (%s), but the twin decides as the original: drop it from the list", name, why)
					continue
				}
				assert.Equal(t, want.Verdict, got.Verdict, "%s: the original decides %s\nthe twin %s", name, want, got)
			}
			assert.Positive(t, denied, "the original denies none of the fixture's resources: the comparison proves little")
		})
	}
	if !strings.Contains(testRunFilter(), "/") {
		for key := range knownDifferences {
			assert.True(t, seen[key], "known difference %q: no such fixture resource", key)
		}
	}
}

// The README of examples/twins names every known difference's fixture and
// resource, and every twin directory has its fixture.
func TestTwinsAreDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(examples, twins.Twins, "README.md"))
	require.NoError(t, err)
	for key := range knownDifferences {
		fixture, resource, _ := strings.Cut(key, " ")
		_, name, _ := strings.Cut(resource, "/")
		_, name, _ = strings.Cut(name, "/")
		assert.Contains(t, string(readme), fixture, "README.md does not name the known difference %s", key)
		assert.Contains(t, string(readme), name, "README.md does not name the known difference %s", key)
	}
	dirs, err := filepath.Glob(filepath.Join(examples, twins.Twins, "*", "policy.yaml"))
	require.NoError(t, err)
	fixtures, err := twins.Fixtures(examples)
	require.NoError(t, err)
	assert.Len(t, dirs, len(fixtures), "every twin has a fixture in %s, and every fixture a twin", twins.Originals)
}

func engine(t *testing.T, path string) *runtime.Engine {
	t.Helper()
	c, err := twins.Compile(path)
	require.NoError(t, err)
	e, err := c.Engine()
	require.NoError(t, err, path)
	return e
}

// testRunFilter is the -run flag: a filter that selects subtests leaves
// out fixtures, so the known differences cannot all be seen.
func testRunFilter() string {
	if f := flag.Lookup("test.run"); f != nil {
		return f.Value.String()
	}
	return ""
}
