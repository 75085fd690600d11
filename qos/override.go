package qos

import (
	"fmt"
	"net/netip"
)

// Settings applied behind the application's back: values the kernel or a
// driver uses in place of (or in addition to) what an application asks
// for. Each is read by package collect from the file named in Source;
// Status says whether the host exposes it at all.

// SettingStatus says whether a setting was read.
type SettingStatus string

// Statuses of a setting.
const (
	// SettingRead: the file was read; the value fields hold it.
	SettingRead SettingStatus = "read"
	// SettingNotExposed: the driver or kernel has no such file here
	// (upstream mlx5 has no tc/ override; configfs is not mounted; the
	// device has no rdma_cm configfs group yet). Reason says which.
	SettingNotExposed SettingStatus = "not exposed"
	// SettingError: the file exists but could not be read or parsed.
	SettingError SettingStatus = "error"
)

// RDMACMDefault is rdma_cm's per-port defaults in configfs
// (drivers/infiniband/core/cma_configfs.c, default_roce_tos_show and
// default_roce_mode_show, Linux 6.1): the ToS of every rdma_cm
// connection whose application sets none (cma.c cma_resolve_iboe_route:
// tos = id_priv->tos_set ? id_priv->tos : default_roce_tos) and the GID
// type rdma_cm picks.
type RDMACMDefault struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// ToS is default_roce_tos; nil when not read.
	ToS *uint8 `json:"default_roce_tos"`
	// Mode is default_roce_mode ("RoCE v2" or "IB/RoCE v1"); nil when
	// not read.
	Mode   *string       `json:"default_roce_mode"`
	Source string        `json:"source"`
	Status SettingStatus `json:"status"`
	Reason *string       `json:"reason"`
}

// TCOverride is MLNX_OFED mlx5_ib's per-port traffic class override,
// /sys/class/infiniband/<dev>/tc/<port>/traffic_class (mlnx-ofa_kernel
// drivers/infiniband/hw/mlx5/main_ext.c traffic_class_show/store; OFED
// 25.10). A global value replaces the traffic class of every connected
// QP on the port (mlx5_ib_qp_set_tclass in qp.c, applied by
// mlx5_set_path as dscp = tclass >> 2); rules replace it for matching
// source/destination addresses. User AHs (UD) are not affected. Upstream
// mlx5 has no such file.
type TCOverride struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Global is the port-wide traffic class ("Global tclass=N"); nil when
	// none is set.
	Global *uint8        `json:"traffic_class"`
	Rules  []TCRule      `json:"rules"`
	Source string        `json:"source"`
	Status SettingStatus `json:"status"`
	Reason *string       `json:"reason"`
}

// TCRule is one address rule of a TCOverride: connections from Src (nil:
// any) to an address in Dst (nil: any) get TrafficClass.
type TCRule struct {
	Src          *netip.Addr   `json:"src"`
	Dst          *netip.Prefix `json:"dst"`
	TrafficClass uint8         `json:"traffic_class"`
}

// Active reports whether the override changes any connection.
func (o *TCOverride) Active() bool {
	return o != nil && o.Status == SettingRead && (o.Global != nil || len(o.Rules) > 0)
}

// DCQCN is a netdev's congestion control (DCQCN) configuration as MLNX_OFED
// mlx5_core exposes it under /sys/class/net/<netdev>/ecn (mlnx-ofa_kernel
// drivers/net/ethernet/mellanox/mlx5/core/en_sysfs.c mlx5e_fill_attributes,
// en_ecn.c mlx5e_show_ecn_enable / mlx5e_show_cnp_dscp /
// mlx5e_show_cnp_802p_prio; OFED 25.10): roce_np/enable/<p> (the
// notification point sends CNPs for CE-marked packets of priority p),
// roce_rp/enable/<p> (the reaction point slows down on CNPs), and the
// DSCP and 802.1p priority CNPs are sent with. Upstream mlx5 keeps these
// in debugfs (drivers/infiniband/hw/mlx5/cong.c, cc_params, root only),
// which is not read.
type DCQCN struct {
	Netdev string `json:"netdev"`
	// NP and RP are the enable bits per priority; nil entries were not
	// readable.
	NP      [8]*bool      `json:"np_enable"`
	RP      [8]*bool      `json:"rp_enable"`
	CNPDSCP *uint8        `json:"cnp_dscp"`
	CNPPrio *uint8        `json:"cnp_802p_prio"`
	Source  string        `json:"source"`
	Status  SettingStatus `json:"status"`
	Reason  *string       `json:"reason"`
}

// Enabled reports whether DCQCN's notification and reaction points are
// on for prio (nil when not known).
func (d *DCQCN) Enabled(prio uint8) (np, rp *bool) {
	if d == nil || d.Status != SettingRead || prio > 7 {
		return nil, nil
	}
	return d.NP[prio], d.RP[prio]
}

// defaultToS returns the ToS an rdma_cm flow gets when its application
// sets none: the port's configfs default_roce_tos (cma.c
// cma_resolve_iboe_route: tos = id_priv->tos_set ? id_priv->tos :
// default_roce_tos), said so in a step; 0, the kernel's initial value,
// with a warning when the default could not be read.
func (r *Result) defaultToS(d *RDMACMDefault) uint8 {
	if d.Status == SettingRead && d.ToS != nil {
		r.step("tos", fmt.Sprint(*d.ToS), "the application sets no ToS: rdma_cm uses the port's default_roce_tos %d (%s; cma.c cma_resolve_iboe_route)", *d.ToS, d.Source)
		return *d.ToS
	}
	why := "not read"
	if d.Reason != nil {
		why = *d.Reason
	}
	r.step("tos", "0 (assumed)", "the application sets no ToS and rdma_cm's default_roce_tos of %s port %d is unknown (%s): 0, the value rdma_cm starts with, is assumed", d.Device, d.Port, why)
	r.warn("rdma_cm's default_roce_tos of %s port %d could not be read (%s); ToS 0 is assumed: give --tos if the application or configfs sets one", d.Device, d.Port, why)
	return 0
}

// tcOverride applies an mlx5 traffic class override to a connected QP's
// traffic class (MLNX_OFED mlx5_ib_qp_set_tclass: a global value replaces
// the AV's traffic_class before mlx5_set_path writes dscp = tclass >> 2).
// User and kernel AHs are not affected.
func (r *Result) tcOverride(o *TCOverride, path Path, tc uint8) uint8 {
	if !o.Active() {
		return tc
	}
	if path != PathConnectedQP {
		r.step("tc override", "not applied", "%s sets a traffic class override, which MLNX_OFED applies to connected QPs only, not to %s", o.Source, path)
		return tc
	}
	if o.Global != nil {
		r.step("traffic_class", fmt.Sprintf("%d (override, was %d)", *o.Global, tc), "%s: MLNX_OFED mlx5_ib replaces the traffic class of every connected QP on the port (main_ext.c tclass_get_tclass_locked, qp.c mlx5_ib_qp_set_tclass)", o.Source)
		if *o.Global != tc {
			r.warn("%s overrides the traffic class: the flow asks for %d (DSCP %d) but the NIC sends %d (DSCP %d)", o.Source, tc, DSCP(tc), *o.Global, DSCP(*o.Global))
		}
		return *o.Global
	}
	r.warn("%s has %d address rule(s) that replace the traffic class of connected QPs to matching addresses: this flow's traffic class may differ from %d", o.Source, len(o.Rules), tc)
	return tc
}
