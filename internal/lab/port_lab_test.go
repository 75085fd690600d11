//go:build lab

package lab

import (
	"testing"
	"time"
)

func TestRXEPortActive(t *testing.T) {
	if err := WaitPortActive(RDMADevice, 1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
