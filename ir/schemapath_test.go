package ir

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchemaPathRoundTrips(t *testing.T) {
	p := SchemaPath(SchemaPath(SchemaPath("", "metadata"), "labels"), `app.kubernetes.io/name`)
	assert.Equal(t, `metadata.labels["app.kubernetes.io/name"]`, p)
	steps, err := SchemaPathSteps(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"metadata", "labels", "app.kubernetes.io/name"}, steps)
	steps, err = SchemaPathSteps(`spec.containers[].securityContext["a\"]b"][]`)
	require.NoError(t, err)
	assert.Equal(t, []string{"spec", "containers", "[]", "securityContext", `a"]b`, "[]"}, steps)
}
