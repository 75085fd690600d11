//go:build !ibverbs || !cgo

package ah

import (
	"errors"
	"strings"
	"testing"
)

func TestCreateBuiltWithoutIbverbs(t *testing.T) {
	_, err := Create("rxe0", goodAttr(), CreateOptions{})
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "rebuild with -tags ibverbs and libibverbs-dev") {
		t.Fatalf("Create: %v, want ErrNotBuilt with the rebuild hint", err)
	}
}
