//go:build lab

package collect

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/rdmatool"
)

// On every lab kernel (6.1 and 7.x): the census of the single-host lab —
// rxe0's GSI QP, owned by ib_core — equals `rdma -j resource show qp` and
// `cm_id`, field for field, and every dump of rxe0 was read.
// (TestFabricCensus, 7.x, has applications running.)
func TestLabCensus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		q1, i1 := rdmaJSON(t, ctx, "qp"), rdmaJSON(t, ctx, "cm_id")
		c, err := Census(CensusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q2, i2 := rdmaJSON(t, ctx, "qp"), rdmaJSON(t, ctx, "cm_id")
		if !bytes.Equal(q1, q2) || !bytes.Equal(i1, i2) {
			if try == 4 {
				t.Fatalf("rdma resource show changed across every reading:\n%s\n%s", q1, q2)
			}
			continue
		}
		qps, err := rdmatool.ParseQPs(q1)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := rdmatool.ParseCMIDs(i1)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range rdmatool.Compare(qps, ids, c, true) {
			t.Error(d)
		}
		gsi := c.QP(lab.RDMADevice, 1)
		if gsi == nil || gsi.Type != "GSI" || gsi.Owner != census.OwnerKernel || gsi.Comm == "" {
			t.Errorf("%s QP 1: %+v, want the GSI QP of a kernel owner", lab.RDMADevice, gsi)
		}
		for _, s := range c.Sources {
			if s.Device == lab.RDMADevice && s.Status != census.StatusRead {
				t.Errorf("%s of %s: %s (%s)", s.Source, s.Device, s.Status, s.Reason)
			}
		}
		t.Logf("%d QPs, %d rdma_cm IDs", len(c.QPs), len(c.CMIDs))
		return
	}
}
