package verify

import (
	"testing"

	"github.com/stretchr/testify/assert"
	yaml "go.yaml.in/yaml/v3"
)

func TestAssertionsAsGatorJudgesThem(t *testing.T) {
	messages := []string{"container <a> is privileged", "container <b> is privileged", "hostPID is not allowed"}
	cases := map[string]struct {
		assertion string
		want      Outcome
	}{
		"yes is the default":               {`{}`, Passed},
		"yes stays a string in YAML 1.2":   {`{violations: yes}`, Passed},
		"no":                               {`{violations: no}`, Failed},
		"an exact count":                   {`{violations: 3}`, Passed},
		"a wrong count":                    {`{violations: 2}`, Failed},
		"message counts matching ones":     {`{violations: 2, message: "privileged"}`, Passed},
		"message is unanchored":            {`{violations: 1, message: "host"}`, Passed},
		"no matching message":              {`{violations: no, message: "seccomp"}`, Passed},
		"a regexp that does not compile":   {`{message: "("}`, Error},
		"a count that is not yes/no/count": {`{violations: maybe}`, Error},
		"a negative count":                 {`{violations: -1}`, Error},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var a assertion
			assert.NoError(t, yaml.Unmarshal([]byte(tc.assertion), &a))
			assert.Equal(t, tc.want, a.check(Result{}, messages).Outcome)
		})
	}
}

func TestGatorClaimsSuitesOnly(t *testing.T) {
	assert.True(t, Gator{}.Claims("s.yaml", []byte("kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\n")))
	assert.False(t, Gator{}.Claims("c.yaml", []byte("kind: ConstraintTemplate\napiVersion: templates.gatekeeper.sh/v1\n")))
	assert.False(t, Gator{}.Claims("k.yaml", []byte("kind: Test\napiVersion: cli.kyverno.io/v1alpha1\n")))
}
