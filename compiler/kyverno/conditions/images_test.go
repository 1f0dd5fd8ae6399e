package conditions

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestImagesExpressionCompiles(t *testing.T) {
	out, err := evalCEL(t, ImagesExpression(), `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a, image: nginx}]}}`, "CREATE")
	require.NoError(t, err)
	t.Logf("%v", out)
}
