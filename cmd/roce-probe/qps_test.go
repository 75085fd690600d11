package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// qpsCensus is a census as collect writes it, with every kind of entry:
// a kernel GSI QP, a process's RC QP with driver attributes (a number in
// hex and a text, as hns and bnxt_re add them), a QP of a process the
// reader cannot see, a listener and a connected rdma_cm ID, a raw context
// and a source of each status.
const qpsCensus = `{"qps":[
 {"device":"rxe0","port":1,"qpn":1,"dest_qp":null,"type":"GSI","subtype":null,"state":"RTS","sq_psn":0,"rq_psn":null,"path_mig_state":null,"pdn":null,"owner":"kernel","pid":null,"comm":"ib_core","driver_attrs":[],"traffic_class":null,"sl":null,"dscp":null,"markings_reason":"not reported"},
 {"device":"rxe0","port":1,"qpn":17,"dest_qp":18,"type":"RC","subtype":null,"state":"RTS","sq_psn":4711,"rq_psn":815,"path_mig_state":"MIGRATED","pdn":3,"owner":"process","pid":4242,"comm":"ib_write_bw","driver_attrs":[{"name":"sq_wqe_cnt","value":256,"value_text":null,"hex":true},{"name":"owner","value":null,"value_text":"user","hex":false}],"traffic_class":106,"sl":3,"dscp":26,"markings_reason":null},
 {"device":"rxe0","port":null,"qpn":19,"dest_qp":null,"type":"UD","subtype":null,"state":"RESET","sq_psn":0,"rq_psn":null,"path_mig_state":null,"pdn":4,"owner":null,"pid":null,"comm":null,"driver_attrs":[],"traffic_class":null,"sl":null,"dscp":null,"markings_reason":"not reported"}],
"cm_ids":[
 {"device":"rxe0","port":null,"cm_id":0,"qpn":null,"qp_type":null,"port_space":"TCP","state":"LISTEN","src":"0.0.0.0","src_port":7471,"dst":null,"dst_port":null,"tos":null,"owner":"process","pid":100,"comm":"rping","driver_attrs":null},
 {"device":"rxe0","port":1,"cm_id":1,"qpn":21,"qp_type":"RC","port_space":"TCP","state":"CONNECT","src":"fd00::1","src_port":40000,"dst":"fd00::2","dst_port":7471,"tos":106,"owner":"process","pid":101,"comm":"rping"}],
"raw_qps":[{"device":"rxe0","port":1,"raw":"01020304"}],
"sources":[
 {"device":"rxe0","source":"RDMA_NLDEV_CMD_RES_QP_GET","status":"read","reason":null},
 {"device":"rxe0","source":"RDMA_NLDEV_CMD_RES_QP_GET_RAW","status":"not permitted","reason":"needs CAP_NET_ADMIN"},
 {"device":null,"source":"owner PIDs","status":"not exposed","reason":"1 QPs and rdma_cm IDs come without an owner"}]}`

func qpsFixture(t *testing.T) string {
	t.Helper()
	doc := strings.Replace(qpsCensus, `,"driver_attrs":null}`, `}`, 1)
	return snapshotVariant(t, "rxe", func(d map[string]any) {
		var c any
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatal(err)
		}
		d["census"] = c
	})
}

// vocabularyQPs runs qps on a snapshot with a census and live (this
// machine's census, whatever it has), for TestVocabulary.
func vocabularyQPs(t *testing.T) {
	t.Helper()
	from := qpsFixture(t)
	for _, args := range [][]string{{"qps", "--from", from, "-o", "json"}, {"qps", "--from", from, "--dev", "rxe0", "-o", "json"}, {"qps", "-o", "json"}} {
		out, stderr, code := runCLI(t, "", args...)
		if code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
			continue
		}
		checkOutput(t, "qps -o json", out)
	}
}

func TestQPsFromSnapshot(t *testing.T) {
	from := qpsFixture(t)
	out, stderr, code := runCLI(t, "", "qps", "--from", from)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The table: one row per QP and rdma_cm ID, kernel owners in
	// brackets as rdma resource show prints them, unknowns as "-" or "?",
	// then the sources not read.
	for _, want := range []string{
		"rxe0    1     1    GSI   RTS    -        0       -       kernel  [ib_core]",
		"rxe0    1     17   RC    RTS    18       4711    815     4242    ib_write_bw",
		"rxe0    -     19   UD    RESET  -        0       -       ?       -",
		"rxe0    -     0      -    TCP  LISTEN   0.0.0.0:7471",
		"[fd00::1]:40000  [fd00::2]:7471",
		"# raw QP context of rxe0 port 1: 4 bytes",
		"# RDMA_NLDEV_CMD_RES_QP_GET_RAW of rxe0: not permitted: needs CAP_NET_ADMIN",
		"# owner PIDs: not exposed: 1 QPs and rdma_cm IDs come without an owner",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// JSON is the census as the snapshot holds it.
	out, _, code = runCLI(t, "", "qps", "--from", from, "-o", "json")
	var got, want any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if err := json.Unmarshal([]byte(strings.Replace(qpsCensus, `,"driver_attrs":null}`, `}`, 1)), &want); err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(got), mustJSON(want); g != w {
		t.Errorf("qps -o json:\n%s\nwant\n%s", g, w)
	}
}

func TestQPsBadInput(t *testing.T) {
	from := qpsFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"qps", "--from", from, "--dev", "mlx5_0"}, `--dev "mlx5_0": no such RDMA device in the snapshot: want one of rxe0`},
		{[]string{"qps", "--from", from, "--raw"}, "--raw reads the live host's raw QP contexts: it cannot be given with --from"},
		{[]string{"qps", "--from", fixture("mlx5")}, "the snapshot has no census"},
		{[]string{"qps", "--dev", "no_such_dev0"}, `--dev "no_such_dev0"`},
		{[]string{"qps", "-o", "yaml"}, "-o"},
		{[]string{"qps", "extra"}, "extra"},
	} {
		out, stderr, code := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d with %q", tc.args, code, stderr, out, exitUsage, tc.want)
		}
	}
}
