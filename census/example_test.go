package census_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/roce-probe/roce-probe/census"
)

// A census as `roce-probe qps -o json` prints it (and a snapshot holds
// it): which process owns the QP a frame was sent from.
func ExampleCensus_QP() {
	doc := `{"qps":[{"device":"rxe0","port":1,"qpn":17,"dest_qp":18,"type":"RC","subtype":null,"state":"RTS",
	"sq_psn":4711,"rq_psn":815,"path_mig_state":"MIGRATED","pdn":3,"owner":"process","pid":4242,"comm":"ib_write_bw",
	"driver_attrs":[],"traffic_class":null,"sl":null,"dscp":null,"markings_reason":"not reported"}],
	"cm_ids":[],"raw_qps":null,"sources":[]}`
	var c census.Census
	if err := json.Unmarshal([]byte(doc), &c); err != nil {
		fmt.Println(err)
		return
	}
	q := c.QP("rxe0", 17)
	fmt.Printf("QP %d (%s, %s) → QP %d: pid %d (%s)\n", q.QPN, q.Type, q.State, *q.DestQP, q.PID, q.Comm)
	// Output: QP 17 (RC, RTS) → QP 18: pid 4242 (ib_write_bw)
}

// Decode reads the reply to an RDMA netlink QP dump as read from the
// socket: here rxe1's in the lab (testdata/make-lab-dumps.sh), with two
// ib_send_lat processes and an rping connected to h2. A process's command
// is /proc/PID/comm, which collect.Census fills; the kernel names its own.
func ExampleDecode() {
	b, err := os.ReadFile("testdata/rxe1-qp.nl")
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := census.Decode(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, q := range c.QPs {
		fmt.Printf("%s port %d QP %d %s %s owner %s pid %d comm %q\n", q.Device, q.Port, q.QPN, q.Type, q.State, q.Owner, q.PID, q.Comm)
	}
	// Output:
	// rxe1 port 1 QP 17 RC RTS owner process pid 227 comm ""
	// rxe1 port 1 QP 18 RC RTS owner process pid 239 comm ""
	// rxe1 port 1 QP 19 RC RTS owner process pid 257 comm ""
	// rxe1 port 1 QP 1 GSI RTS owner kernel pid 0 comm "ib_core"
}
