package census_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/internal/rdmatool"
)

// The dumps captured in the lab (testdata/make-lab-dumps.sh: rxe on Linux
// 7.3.4, two ib_send_lat pairs and an rping pair connected) decode to exactly
// what iproute2's rdma tool printed at the same moment, field for field.
func TestDecodeLabDumps(t *testing.T) {
	files, err := filepath.Glob("testdata/*.nl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dump fixtures in testdata: %v", err)
	}
	var c census.Census
	for _, f := range files {
		if strings.HasSuffix(f, "-qp_raw.nl") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := census.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c.QPs = append(c.QPs, d.QPs...)
		c.CMIDs = append(c.CMIDs, d.CMIDs...)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	qps, err := rdmatool.ParseQPs(read("rdma-qp.json"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := rdmatool.ParseCMIDs(read("rdma-cm_id.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(qps) == 0 || len(ids) == 0 {
		t.Fatalf("fixtures list %d QPs and %d rdma_cm IDs", len(qps), len(ids))
	}
	for _, d := range rdmatool.Compare(qps, ids, &c, false) {
		t.Error(d)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

// The raw QP dump of rxe, as root: rxe has no fill_res_qp_entry_raw, so
// nldev.c's fill_res_qp_raw_entry fails with EINVAL, which the kernel
// sends in the dump's NLMSG_DONE (lab capture: testdata/make-lab-dumps.sh).
func TestDecodeLabRawDump(t *testing.T) {
	b, err := os.ReadFile("testdata/rxe1-qp_raw.nl")
	if err != nil {
		t.Fatal(err)
	}
	c, err := census.Decode(b)
	var ke *census.KernelError
	if !errors.As(err, &ke) || ke.Errno != 22 || len(c.RawQPs) != 0 {
		t.Errorf("got %v (%#v), %d raw contexts; want EINVAL (22) and none", err, ke, len(c.RawQPs))
	}
}
