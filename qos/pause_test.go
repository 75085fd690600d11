package qos

import (
	"encoding/binary"
	"testing"
)

// nlattr builds one netlink attribute (struct nlattr, padded to 4 bytes).
func nlattr(typ uint16, data []byte) []byte {
	b := make([]byte, 4, 4+len(data)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(data)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// pauseReply is what the kernel sends for `ethtool -a eth1` (genlmsghdr
// cmd ETHTOOL_MSG_PAUSE_GET_REPLY 22, version 1; the header nest with
// ETHTOOL_A_HEADER_DEV_INDEX 1 and DEV_NAME 2; then AUTONEG, RX, TX).
func pauseReply(autoneg, rx, tx byte) []byte {
	b := []byte{22, 1, 0, 0}
	hdr := append(nlattr(1, []byte{3, 0, 0, 0}), nlattr(2, []byte("eth1\x00"))...)
	b = append(b, nlattr(1|0x8000, hdr)...) // ETHTOOL_A_PAUSE_HEADER, NLA_F_NESTED
	b = append(b, nlattr(2, []byte{autoneg})...)
	b = append(b, nlattr(3, []byte{rx})...)
	return append(b, nlattr(4, []byte{tx})...)
}

func TestParsePauseReply(t *testing.T) {
	var p Pause
	if err := ParsePauseReply(pauseReply(0, 1, 0), &p); err != nil {
		t.Fatal(err)
	}
	if p.Autoneg == nil || *p.Autoneg || p.RX == nil || !*p.RX || p.TX == nil || *p.TX {
		t.Fatalf("autoneg %v rx %v tx %v, want off, on, off", p.Autoneg, p.RX, p.TX)
	}
	p.Status = SettingRead
	if on, known := p.On(); !on || !known || p.Directions() != "rx" {
		t.Errorf("On() = %v, %v; Directions %q", on, known, p.Directions())
	}
	var off Pause
	if err := ParsePauseReply(pauseReply(1, 0, 0), &off); err != nil {
		t.Fatal(err)
	}
	off.Status = SettingRead
	if on, known := off.On(); on || !known || off.Directions() != "" {
		t.Errorf("rx and tx off: On() = %v, %v", on, known)
	}
	// Not read: unknown.
	if _, known := (&Pause{Status: SettingError}).On(); known {
		t.Error("settings that were not read are known")
	}
	for name, b := range map[string][]byte{
		"short":            {22, 1},
		"truncated attr":   append([]byte{22, 1, 0, 0}, 8, 0, 3, 0, 1),
		"two-byte rx flag": append([]byte{22, 1, 0, 0}, nlattr(3, []byte{1, 1})...),
	} {
		if err := ParsePauseReply(b, &Pause{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParsePauseReply(f *testing.F) {
	f.Add(pauseReply(1, 1, 1))
	f.Add([]byte{22, 1, 0, 0, 5, 0, 3, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Pause
		if err := ParsePauseReply(b, &p); err != nil {
			return
		}
		p.Status = SettingRead
		on, known := p.On()
		if known && on != (*p.RX || *p.TX) {
			t.Fatalf("On %v with rx %v tx %v", on, *p.RX, *p.TX)
		}
	})
}
