package census

import (
	"encoding/json"
	"testing"
)

// benchReply is one device's QP dump reply with n RC QPs of processes, as
// fill_res_qp_entry writes them (the attributes of qpReply's RC QP), 200
// to a message: the kernel fills a dump message up to its buffer (some 32
// KB) and goes on in the next one.
func benchReply(n int) []byte {
	var out [][]byte
	for i := 0; i < n; i += 200 {
		out = append(out, benchMessage(i, min(n, i+200)))
	}
	var b []byte
	for _, m := range out {
		b = append(b, m...)
	}
	return append(b, done(0)...)
}

func benchMessage(from, to int) []byte {
	var entries [][]byte
	for i := from; i < to; i++ {
		entries = append(entries, nest(attrResQPEntry, nla(attrPortIndex, le32(1)), nla(attrResLQPN, le32(uint32(100+i))), nla(attrResPDN, le32(4)),
			nla(attrResPID, le32(uint32(1000+i%64))), nla(attrResRQPN, le32(uint32(200+i))), nla(attrResRQPSN, le32(815)), nla(attrResSQPSN, le32(4711)),
			nla(attrResPathMig, []byte{0}), nla(attrResType, []byte{2}), nla(attrResState, []byte{3})))
	}
	return nlmsg(DumpQP.MessageType(), nla(attrDevIndex, le32(0)), nla(attrDevName, cstr("mlx5_0")), nest(attrResQP, entries...))
}

// Decoding the dump of a host with 10,000 QPs (docs/performance.md).
func BenchmarkDecode10kQPs(b *testing.B) {
	reply := benchReply(10000)
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := Decode(reply)
		if err != nil || len(c.QPs) != 10000 {
			b.Fatal(err, len(c.QPs))
		}
	}
}

// The census of 10,000 QPs as JSON (the snapshot's census) and back.
func BenchmarkJSON10kQPs(b *testing.B) {
	c, err := Decode(benchReply(10000))
	if err != nil {
		b.Fatal(err)
	}
	doc, err := json.Marshal(c)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var back Census
		if err := json.Unmarshal(doc, &back); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(doc))/10000, "JSON-bytes/QP")
}
