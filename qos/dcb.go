package qos

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Constants from include/uapi/linux/dcbnl.h. x/sys/unix has RTM_GETDCB but
// none of these.
const (
	dcbAttrIfname = 1  // DCB_ATTR_IFNAME
	dcbAttrIEEE   = 13 // DCB_ATTR_IEEE
	dcbAttrDCBX   = 14 // DCB_ATTR_DCBX

	ieeeAttrETS        = 1  // DCB_ATTR_IEEE_ETS
	ieeeAttrPFC        = 2  // DCB_ATTR_IEEE_PFC
	ieeeAttrAppTable   = 3  // DCB_ATTR_IEEE_APP_TABLE
	ieeeAttrAppTrust   = 11 // DCB_ATTR_DCB_APP_TRUST_TABLE
	appAttrIEEE        = 1  // DCB_ATTR_IEEE_APP (standard selectors)
	appAttrDCB         = 2  // DCB_ATTR_DCB_APP (non-standard selectors, e.g. PCP)
	nlaTypeMask        = 0x3fff
	ieeeMaxTCs         = 8
	sizeofIEEEPFC      = 136
	sizeofIEEEETS      = 59
	sizeofDCBApp       = 4
	sizeofDCBMsg       = 4 // struct dcbmsg
	ieeePFCDelayOffset = 4
)

// APP selectors (include/uapi/linux/dcbnl.h).
const (
	AppSelEthertype uint8 = 1   // IEEE_8021QAZ_APP_SEL_ETHERTYPE
	AppSelStream    uint8 = 2   // IEEE_8021QAZ_APP_SEL_STREAM (TCP/SCTP port)
	AppSelDgram     uint8 = 3   // IEEE_8021QAZ_APP_SEL_DGRAM (UDP/DCCP port)
	AppSelAny       uint8 = 4   // IEEE_8021QAZ_APP_SEL_ANY
	AppSelDSCP      uint8 = 5   // IEEE_8021QAZ_APP_SEL_DSCP
	AppSelPCP       uint8 = 255 // DCB_APP_SEL_PCP (protocol = PCP | DEI<<3)
)

// ETS transmission selection algorithms (IEEE_8021QAZ_TSA_*).
const (
	TSAStrict   uint8 = 0
	TSACBShaper uint8 = 1
	TSAETS      uint8 = 2
	TSAVendor   uint8 = 255
)

// DCBX capability bits (DCB_CAP_DCBX_*).
const (
	DCBXHost       uint8 = 0x01 // negotiated by a host LLDP agent (OS controlled)
	DCBXLLDManaged uint8 = 0x02 // negotiated by another entity, e.g. NIC firmware
	DCBXVerCEE     uint8 = 0x04
	DCBXVerIEEE    uint8 = 0x08
	DCBXStatic     uint8 = 0x10
)

// PFC is struct ieee_pfc: 136 bytes in host byte order, with one byte of
// padding before Delay (offset 4).
type PFC struct {
	Cap         uint8     `json:"pfc_cap"`     // how many TCs may have PFC at once
	Enabled     uint8     `json:"pfc_en"`      // bitmap: bit p set = PFC on priority p
	MBC         uint8     `json:"mbc"`         // MACsec bypass capability (a flag: a boolean in JSON)
	Delay       uint16    `json:"delay"`       // allowance for round-trip delay, in bits
	Requests    [8]uint64 `json:"requests"`    // PFC frames sent, per priority
	Indications [8]uint64 `json:"indications"` // PFC frames received, per priority
}

// pfcJSON is PFC's JSON form: mbc, a flag, is a boolean.
type pfcJSON struct {
	Cap         uint8     `json:"pfc_cap"`
	Enabled     uint8     `json:"pfc_en"`
	MBC         bool      `json:"mbc"`
	Delay       uint16    `json:"delay"`
	Requests    [8]uint64 `json:"requests"`
	Indications [8]uint64 `json:"indications"`
}

// MarshalJSON writes {pfc_cap, pfc_en, mbc, delay, requests,
// indications}; mbc is a boolean (the kernel's u8 flag is not 0).
func (p PFC) MarshalJSON() ([]byte, error) {
	return json.Marshal(pfcJSON{p.Cap, p.Enabled, p.MBC != 0, p.Delay, p.Requests, p.Indications})
}

// UnmarshalJSON reads MarshalJSON's form; unknown keys are errors.
func (p *PFC) UnmarshalJSON(b []byte) error {
	var w pfcJSON
	if err := strictJSON(b, &w); err != nil {
		return err
	}
	*p = PFC{Cap: w.Cap, Enabled: w.Enabled, MBC: flag(w.MBC), Delay: w.Delay, Requests: w.Requests, Indications: w.Indications}
	return nil
}

func flag(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// strictJSON decodes b into v, rejecting unknown keys.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// On reports whether PFC is enabled on priority prio (0..7).
func (p PFC) On(prio uint8) bool { return prio < 8 && p.Enabled&(1<<prio) != 0 }

// EnabledPriorities lists the priorities with PFC on.
func (p PFC) EnabledPriorities() Bytes {
	out := Bytes{}
	for i := uint8(0); i < 8; i++ {
		if p.On(i) {
			out = append(out, i)
		}
	}
	return out
}

// MarshalBinary encodes p as the kernel's struct ieee_pfc.
func (p PFC) MarshalBinary() ([]byte, error) {
	b := make([]byte, sizeofIEEEPFC)
	b[0], b[1], b[2] = p.Cap, p.Enabled, p.MBC
	binary.NativeEndian.PutUint16(b[ieeePFCDelayOffset:], p.Delay)
	for i := 0; i < 8; i++ {
		binary.NativeEndian.PutUint64(b[8+8*i:], p.Requests[i])
		binary.NativeEndian.PutUint64(b[72+8*i:], p.Indications[i])
	}
	return b, nil
}

// UnmarshalBinary decodes a struct ieee_pfc. Longer input (a future kernel
// appending fields) is accepted; shorter input is an error.
func (p *PFC) UnmarshalBinary(b []byte) error {
	if len(b) < sizeofIEEEPFC {
		return fmt.Errorf("qos: ieee_pfc is %d bytes: want at least %d", len(b), sizeofIEEEPFC)
	}
	p.Cap, p.Enabled, p.MBC = b[0], b[1], b[2]
	p.Delay = binary.NativeEndian.Uint16(b[ieeePFCDelayOffset:])
	for i := 0; i < 8; i++ {
		p.Requests[i] = binary.NativeEndian.Uint64(b[8+8*i:])
		p.Indications[i] = binary.NativeEndian.Uint64(b[72+8*i:])
	}
	return nil
}

// ETS is struct ieee_ets (59 bytes, all u8).
type ETS struct {
	Willing    uint8    `json:"willing"` // a flag: a boolean in JSON
	Cap        uint8    `json:"ets_cap"`
	CBS        uint8    `json:"cbs"`      // credit-based shaper (a flag: a boolean in JSON)
	TCTxBW     [8]uint8 `json:"tc_tx_bw"` // per TC, percent
	TCRxBW     [8]uint8 `json:"tc_rx_bw"`
	TCTSA      [8]uint8 `json:"tc_tsa"`  // per TC, TSA* constants
	PrioTC     [8]uint8 `json:"prio_tc"` // per priority: its traffic class
	TCRecoBW   [8]uint8 `json:"tc_reco_bw"`
	TCRecoTSA  [8]uint8 `json:"tc_reco_tsa"`
	RecoPrioTC [8]uint8 `json:"reco_prio_tc"`
}

// etsJSON is ETS's JSON form: willing and cbs, flags, are booleans.
type etsJSON struct {
	Willing    bool     `json:"willing"`
	Cap        uint8    `json:"ets_cap"`
	CBS        bool     `json:"cbs"`
	TCTxBW     [8]uint8 `json:"tc_tx_bw"`
	TCRxBW     [8]uint8 `json:"tc_rx_bw"`
	TCTSA      [8]uint8 `json:"tc_tsa"`
	PrioTC     [8]uint8 `json:"prio_tc"`
	TCRecoBW   [8]uint8 `json:"tc_reco_bw"`
	TCRecoTSA  [8]uint8 `json:"tc_reco_tsa"`
	RecoPrioTC [8]uint8 `json:"reco_prio_tc"`
}

// MarshalJSON writes the keys of struct ieee_ets; willing and cbs are
// booleans (the kernel's u8 flags are not 0).
func (e ETS) MarshalJSON() ([]byte, error) {
	return json.Marshal(etsJSON{e.Willing != 0, e.Cap, e.CBS != 0, e.TCTxBW, e.TCRxBW, e.TCTSA, e.PrioTC, e.TCRecoBW, e.TCRecoTSA, e.RecoPrioTC})
}

// UnmarshalJSON reads MarshalJSON's form; unknown keys are errors.
func (e *ETS) UnmarshalJSON(b []byte) error {
	var w etsJSON
	if err := strictJSON(b, &w); err != nil {
		return err
	}
	*e = ETS{flag(w.Willing), w.Cap, flag(w.CBS), w.TCTxBW, w.TCRxBW, w.TCTSA, w.PrioTC, w.TCRecoBW, w.TCRecoTSA, w.RecoPrioTC}
	return nil
}

func (e *ETS) arrays() []*[8]uint8 {
	return []*[8]uint8{&e.TCTxBW, &e.TCRxBW, &e.TCTSA, &e.PrioTC, &e.TCRecoBW, &e.TCRecoTSA, &e.RecoPrioTC}
}

// MarshalBinary encodes e as the kernel's struct ieee_ets.
func (e ETS) MarshalBinary() ([]byte, error) {
	b := make([]byte, sizeofIEEEETS)
	b[0], b[1], b[2] = e.Willing, e.Cap, e.CBS
	for i, a := range e.arrays() {
		copy(b[3+8*i:], a[:])
	}
	return b, nil
}

// UnmarshalBinary decodes a struct ieee_ets (prio_tc at offset 27).
func (e *ETS) UnmarshalBinary(b []byte) error {
	if len(b) < sizeofIEEEETS {
		return fmt.Errorf("qos: ieee_ets is %d bytes: want at least %d", len(b), sizeofIEEEETS)
	}
	e.Willing, e.Cap, e.CBS = b[0], b[1], b[2]
	for i, a := range e.arrays() {
		copy(a[:], b[3+8*i:3+8*i+8])
	}
	return nil
}

// TSAName returns "strict", "cbs", "ets", "vendor" or the number.
func TSAName(tsa uint8) string {
	switch tsa {
	case TSAStrict:
		return "strict"
	case TSACBShaper:
		return "cbs"
	case TSAETS:
		return "ets"
	case TSAVendor:
		return "vendor"
	}
	return fmt.Sprint(tsa)
}

// App is struct dcb_app: one APP table entry mapping a protocol (a DSCP, a
// PCP, an EtherType, a port) to a priority.
type App struct {
	Selector uint8  `json:"selector"`
	Priority uint8  `json:"priority"`
	Protocol uint16 `json:"protocol"`
}

// MarshalBinary encodes a as struct dcb_app (protocol in host order).
func (a App) MarshalBinary() ([]byte, error) {
	b := make([]byte, sizeofDCBApp)
	b[0], b[1] = a.Selector, a.Priority
	binary.NativeEndian.PutUint16(b[2:], a.Protocol)
	return b, nil
}

// UnmarshalBinary decodes a struct dcb_app.
func (a *App) UnmarshalBinary(b []byte) error {
	if len(b) < sizeofDCBApp {
		return fmt.Errorf("qos: dcb_app is %d bytes: want %d", len(b), sizeofDCBApp)
	}
	a.Selector, a.Priority = b[0], b[1]
	a.Protocol = binary.NativeEndian.Uint16(b[2:])
	return nil
}

// Trust is how a port classifies received frames into priorities.
type Trust string

// Trust modes.
const (
	TrustPCP     Trust = "pcp"     // by the VLAN tag's PCP; untagged frames get the default priority
	TrustDSCP    Trust = "dscp"    // by the IP DSCP through the dscp→prio table
	TrustUnknown Trust = "unknown" // no DCB information
)

// MarshalJSON writes "pcp" or "dscp", and null for an unknown trust mode:
// in roce-probe's JSON what is not known is null.
func (t Trust) MarshalJSON() ([]byte, error) {
	if t == TrustUnknown || t == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(t))
}

// UnmarshalJSON reads MarshalJSON's form; null is TrustUnknown.
func (t *Trust) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == nil {
		*t = TrustUnknown
		return nil
	}
	*t = Trust(*s)
	return nil
}

// DCB is a netdev's DCB state as RTM_GETDCB reports it.
type DCB struct {
	Netdev string `json:"netdev"`
	// Supported is false when the netdev has no DCB support (the kernel
	// answers EOPNOTSUPP: its driver has no dcbnl_ops, as for veth, VLAN
	// devices and rxe's netdev). Reason says why.
	Supported bool   `json:"supported"`
	Reason    string `json:"reason"`
	PFC       *PFC   `json:"pfc"`
	ETS       *ETS   `json:"ets"`
	Apps      []App  `json:"app"`
	// AppTrust is the selector trust order (dcb apptrust), when the
	// driver reports one.
	AppTrust Bytes `json:"app_trust"`
	// DCBX is the DCBX mode bitmap (DCBX* constants); nil when the
	// driver does not report it.
	DCBX *uint8 `json:"dcbx"`
}

// dcbJSON is DCB's wire form (docs/json.md, "dcb").
type dcbJSON struct {
	Netdev    string  `json:"netdev"`
	Supported bool    `json:"supported"`
	Reason    *string `json:"reason"`
	PFC       *PFC    `json:"pfc"`
	ETS       *ETS    `json:"ets"`
	Apps      []App   `json:"app"`
	AppTrust  Bytes   `json:"app_trust"`
	DCBX      *uint8  `json:"dcbx"`
}

// MarshalJSON writes every key always: reason null when DCB is
// supported; pfc, ets, app_trust and dcbx null when not reported; app []
// for a supported netdev without APP entries, null for one without DCB.
func (d DCB) MarshalJSON() ([]byte, error) {
	w := dcbJSON{Netdev: d.Netdev, Supported: d.Supported, PFC: d.PFC, ETS: d.ETS, Apps: d.Apps, AppTrust: d.AppTrust, DCBX: d.DCBX}
	if d.Reason != "" {
		w.Reason = &d.Reason
	}
	if d.Supported && w.Apps == nil {
		w.Apps = []App{}
	}
	return json.Marshal(w)
}

// Validate checks the values a DCB read from a file (roce-probe --dcb)
// may carry but the kernel never reports: APP priorities above 7, a DSCP
// APP protocol above 63, a PCP APP protocol above 15, ETS traffic classes
// above 7 and bandwidth shares above 100 %. The error names the field, the
// value and the allowed range.
func (d *DCB) Validate() error {
	if d == nil {
		return nil
	}
	for i, a := range d.Apps {
		if a.Priority > 7 {
			return fmt.Errorf("qos: %s: app[%d].priority %d is out of range: want 0..7", d.Netdev, i, a.Priority)
		}
		if a.Selector == AppSelDSCP && a.Protocol > 63 {
			return fmt.Errorf("qos: %s: app[%d].protocol %d is out of range for the DSCP selector: want a DSCP 0..63", d.Netdev, i, a.Protocol)
		}
		if a.Selector == AppSelPCP && a.Protocol > 15 {
			return fmt.Errorf("qos: %s: app[%d].protocol %d is out of range for the PCP selector: want PCP | DEI<<3, 0..15", d.Netdev, i, a.Protocol)
		}
	}
	if e := d.ETS; e != nil {
		for _, f := range []struct {
			name string
			v    *[8]uint8
			max  uint8
		}{{"prio_tc", &e.PrioTC, 7}, {"reco_prio_tc", &e.RecoPrioTC, 7}, {"tc_tx_bw", &e.TCTxBW, 100}, {"tc_rx_bw", &e.TCRxBW, 100}, {"tc_reco_bw", &e.TCRecoBW, 100}} {
			for i, v := range f.v {
				if v > f.max {
					return fmt.Errorf("qos: %s: ets.%s[%d] %d is out of range: want 0..%d", d.Netdev, f.name, i, v, f.max)
				}
			}
		}
	}
	return nil
}

// Trust derives the trust mode. An APP trust table decides it when the
// driver has one (its first DSCP or PCP selector); otherwise the port
// trusts DSCP if and only if the APP table has a DSCP entry, which is how
// mlx5 switches (mlx5e_dcbnl_ieee_setapp: the first DSCP APP entry sets
// TRUST_DSCP) and how mlnx_qos reports it.
func (d *DCB) Trust() Trust {
	if d == nil || !d.Supported {
		return TrustUnknown
	}
	for _, s := range d.AppTrust {
		switch s {
		case AppSelDSCP:
			return TrustDSCP
		case AppSelPCP:
			return TrustPCP
		}
	}
	for _, a := range d.Apps {
		if a.Selector == AppSelDSCP {
			return TrustDSCP
		}
	}
	return TrustPCP
}

// DSCPPriority returns the priority the APP table gives dscp. A DSCP may
// map to several priorities; the lowest is returned, as the kernel's
// dcb_ieee_getapp_dscp_prio_mask_map users (mlx5, hns) program one.
func (d *DCB) DSCPPriority(dscp uint8) (uint8, bool) {
	return d.appPriority(AppSelDSCP, uint16(dscp))
}

// PCPPriority returns the priority the APP table gives a PCP (DEI 0);
// without pcp-prio entries a PCP-trusting port uses the PCP itself.
func (d *DCB) PCPPriority(pcp uint8) (uint8, bool) {
	return d.appPriority(AppSelPCP, uint16(pcp&7))
}

// DefaultPriority returns the port's default priority from an APP entry
// {EtherType, protocol 0} (802.1Q-2014), used for frames nothing else
// classifies.
func (d *DCB) DefaultPriority() (uint8, bool) {
	return d.appPriority(AppSelEthertype, 0)
}

// RoCEAppPriority returns the priority of an APP entry for RoCE
// (EtherType 0x8915 or UDP port 4791), which some drivers (bnxt_re) use.
func (d *DCB) RoCEAppPriority() (uint8, bool) {
	if p, ok := d.appPriority(AppSelDgram, 4791); ok {
		return p, true
	}
	return d.appPriority(AppSelEthertype, 0x8915)
}

func (d *DCB) appPriority(sel uint8, proto uint16) (uint8, bool) {
	if d == nil {
		return 0, false
	}
	found := false
	var best uint8
	for _, a := range d.Apps {
		if a.Selector == sel && a.Protocol == proto && (!found || a.Priority < best) {
			best, found = a.Priority, true
		}
	}
	return best, found
}

// DSCPMap returns the DSCP → priorities table of the APP entries, each
// list sorted.
func (d *DCB) DSCPMap() map[uint8]Bytes {
	m := map[uint8]Bytes{}
	if d == nil {
		return m
	}
	for _, a := range d.Apps {
		if a.Selector == AppSelDSCP && a.Protocol < 64 {
			m[uint8(a.Protocol)] = append(m[uint8(a.Protocol)], a.Priority)
		}
	}
	for k := range m {
		sort.Slice(m[k], func(i, j int) bool { return m[k][i] < m[k][j] })
	}
	return m
}

// DCBXString describes a DCBX bitmap: "host" (OS controlled) or
// "lld-managed" (firmware controlled), then the versions, e.g.
// "host,ieee".
func DCBXString(v uint8) string {
	var parts []string
	names := []struct {
		bit  uint8
		name string
	}{{DCBXHost, "host"}, {DCBXLLDManaged, "lld-managed"}, {DCBXVerCEE, "cee"}, {DCBXVerIEEE, "ieee"}, {DCBXStatic, "static"}}
	for _, n := range names {
		if v&n.bit != 0 {
			parts = append(parts, n.name)
		}
	}
	if rest := v &^ 0x1f; rest != 0 {
		parts = append(parts, fmt.Sprintf("0x%02x", rest))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// errTruncated is wrapped by attribute parsing errors.
var errTruncated = errors.New("truncated netlink attribute")

// attr is one netlink attribute.
type attr struct {
	typ  uint16
	data []byte
}

// parseAttrs walks a run of netlink attributes (struct nlattr, host byte
// order, 4-byte aligned). Flag bits (NLA_F_NESTED, NLA_F_NET_BYTEORDER)
// are stripped from the type.
func parseAttrs(b []byte) ([]attr, error) {
	var out []attr
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("qos: %w: %d bytes left, want a 4-byte header", errTruncated, len(b))
		}
		l := int(binary.NativeEndian.Uint16(b))
		t := binary.NativeEndian.Uint16(b[2:]) & nlaTypeMask
		if l < 4 || l > len(b) {
			return nil, fmt.Errorf("qos: %w: length %d with %d bytes left", errTruncated, l, len(b))
		}
		out = append(out, attr{typ: t, data: b[4:l]})
		next := (l + 3) &^ 3
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
	}
	return out, nil
}

// ParseDCBReply decodes the payload of an RTM_GETDCB reply to
// DCB_CMD_IEEE_GET or DCB_CMD_GDCBX (the bytes after the netlink message
// header: struct dcbmsg, then attributes) into d. Attributes it does not
// know, including ones newer kernels add, are skipped.
func ParseDCBReply(b []byte, d *DCB) error {
	if len(b) < sizeofDCBMsg {
		return fmt.Errorf("qos: DCB reply is %d bytes: want at least the %d-byte dcbmsg", len(b), sizeofDCBMsg)
	}
	attrs, err := parseAttrs(b[sizeofDCBMsg:])
	if err != nil {
		return err
	}
	for _, a := range attrs {
		switch a.typ {
		case dcbAttrIfname:
			if d.Netdev == "" {
				d.Netdev = strings.TrimRight(string(a.data), "\x00")
			}
		case dcbAttrDCBX:
			if len(a.data) >= 1 {
				v := a.data[0]
				d.DCBX = &v
			}
		case dcbAttrIEEE:
			if err := parseIEEE(a.data, d); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseIEEE(b []byte, d *DCB) error {
	attrs, err := parseAttrs(b)
	if err != nil {
		return fmt.Errorf("%w (in DCB_ATTR_IEEE)", err)
	}
	for _, a := range attrs {
		switch a.typ {
		case ieeeAttrPFC:
			var p PFC
			if err := p.UnmarshalBinary(a.data); err != nil {
				return err
			}
			d.PFC = &p
		case ieeeAttrETS:
			var e ETS
			if err := e.UnmarshalBinary(a.data); err != nil {
				return err
			}
			d.ETS = &e
		case ieeeAttrAppTable:
			apps, err := parseAttrs(a.data)
			if err != nil {
				return fmt.Errorf("%w (in DCB_ATTR_IEEE_APP_TABLE)", err)
			}
			for _, x := range apps {
				if x.typ != appAttrIEEE && x.typ != appAttrDCB {
					continue
				}
				var app App
				if err := app.UnmarshalBinary(x.data); err != nil {
					return err
				}
				d.Apps = append(d.Apps, app)
			}
		case ieeeAttrAppTrust:
			sels, err := parseAttrs(a.data)
			if err != nil {
				return fmt.Errorf("%w (in DCB_ATTR_DCB_APP_TRUST_TABLE)", err)
			}
			for _, s := range sels {
				if (s.typ == appAttrIEEE || s.typ == appAttrDCB) && len(s.data) >= 1 {
					d.AppTrust = append(d.AppTrust, s.data[0])
				}
			}
		}
	}
	return nil
}

// Bytes is a list of small numbers (priorities, selectors) that marshals
// to JSON as an array of numbers rather than base64.
type Bytes []uint8

// MarshalJSON writes b as [1,2,3] (null for nil).
func (b Bytes) MarshalJSON() ([]byte, error) {
	if b == nil {
		return []byte("null"), nil
	}
	out := []byte{'['}
	for i, v := range b {
		if i > 0 {
			out = append(out, ',')
		}
		out = fmt.Appendf(out, "%d", v)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads an array of numbers 0..255.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var v []uint16
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if v == nil {
		*b = nil
		return nil
	}
	out := make(Bytes, len(v))
	for i, x := range v {
		if x > 255 {
			return fmt.Errorf("qos: %d is out of range: want 0..255", x)
		}
		out[i] = uint8(x)
	}
	*b = out
	return nil
}
