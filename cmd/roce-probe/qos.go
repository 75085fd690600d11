package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
)

func init() { register(newQoSCmd) }

func newQoSCmd() *cobra.Command {
	var src hostFlags
	var netdev, format string
	c := &cobra.Command{
		Use:   "qos [--netdev N | --dev D [--port P]]",
		Short: "Show trust mode, dscp→prio, prio→tc, PFC, DCBX and VLAN QoS maps of RoCE netdevs",
		Long: `qos shows, for a netdev (or every port of an RDMA device, or every RDMA device),
what decides the priority of RoCE traffic: the port's DCB state read over
rtnetlink (trust mode, the APP table's dscp→prio, ETS prio→tc and bandwidth,
PFC enable bits and delay, DCBX mode) — what 'dcb pfc show', 'dcb app show'
and mlnx_qos print — and the egress/ingress QoS maps of every VLAN device
above the real device. DCB is read from the real device under VLAN devices;
a netdev without DCB support (veth, rxe's netdev) shows "no DCB". On a host
without RDMA devices, the ports are the predicted Soft-RoCE ones (said so).
--from FILE analyses a snapshot written by 'roce-probe collect'. Needs no
privileges.`,
		Example: `  roce-probe qos
  roce-probe qos --netdev enp1s0f0
  roce-probe qos --dev mlx5_0 -o json
  roce-probe qos --from node1.json.gz --dev mlx5_0`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := src.snapshot(collect.SectionRDMA | collect.SectionNet | collect.SectionDCB | collect.SectionSettings)
			if err != nil {
				return err
			}
			ns, err := s.Namespace(src.netns)
			if err != nil {
				return src.snapshotError(err)
			}
			if s.DCB == nil {
				return src.snapshotError(&host.MissingError{Section: "dcb"})
			}
			var reports []qos.Report
			if netdev != "" {
				if _, ok := ns.ByName(netdev); !ok {
					return src.noSuchNetdev("--netdev", netdev, ns)
				}
				rs, err := s.QoSReports(ns.Netns, netdev)
				if err != nil {
					return usageError{err}
				}
				reports = rs
			} else {
				v, err := src.viewOf(s)
				if err != nil {
					return err
				}
				if err := src.checkDev(v); err != nil {
					return err
				}
				src.notePredicted(cmd.ErrOrStderr(), v)
				for _, p := range src.ports(v) {
					rs, err := v.QoSReports(p.Device, p.Port)
					if err != nil {
						return usageError{err}
					}
					reports = append(reports, rs...)
				}
			}
			if reports == nil {
				reports = []qos.Report{}
			}
			if format == "json" {
				return writeJSONIndent(cmd.OutOrStdout(), reports)
			}
			for i, r := range reports {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				printQoSReport(cmd.OutOrStdout(), r)
			}
			return nil
		},
	}
	c.Flags().StringVar(&netdev, "netdev", "", "netdev to show (DCB is read from its real device)")
	src.add(c, hostFlagSet{dev: true, port: true, devUsage: "RDMA device: show the netdev of each of its Ethernet ports"})
	outputVar(c.Flags(), &format, "table", "json")
	flagsExclusive(c, "netdev", "dev")
	flagsExclusive(c, "netdev", "port")
	return c
}

func printQoSReport(w io.Writer, r qos.Report) {
	head := r.Netdev
	if r.Real == "" {
		head += " (real device not visible)"
	} else if r.Real != r.Netdev {
		head += " (real device " + r.Real + ")"
	}
	if r.SlaveOf != "" {
		head += " (slave of " + r.SlaveOf + ")"
	}
	if r.Device != "" {
		head = fmt.Sprintf("%s port %d: %s", r.Device, r.Port, head)
		if r.Driver != nil {
			head += fmt.Sprintf(", driver %s", r.Driver.Driver)
		}
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	d := r.DCB
	switch {
	case d == nil && r.Real == "":
		fmt.Fprintf(tw, "  DCB:\tnot visible: %s\n", ptrOr(r.DCBError, "", str))
	case d == nil:
		fmt.Fprintf(tw, "  DCB:\tnot read: %s\n", ptrOr(r.DCBError, "", str))
	case !d.Supported:
		fmt.Fprintf(tw, "  DCB:\tno DCB: %s\n", d.Reason)
	default:
		dcbx := "not reported"
		if r.DCBX != nil {
			dcbx = *r.DCBX
		}
		fmt.Fprintf(tw, "  DCBX mode:\t%s\n", dcbx)
		fmt.Fprintf(tw, "  trust:\t%s\n", r.Trust)
		var dp []string
		for dscp := 0; dscp < 64; dscp++ {
			for _, p := range r.DSCPPrio[uint8(dscp)] {
				dp = append(dp, fmt.Sprintf("%d:%d", dscp, p))
			}
		}
		if len(dp) == 0 {
			dp = []string{"none"}
		}
		fmt.Fprintf(tw, "  dscp-prio:\t%s\n", strings.Join(dp, " "))
		var other []string
		for _, a := range d.Apps {
			if a.Selector != qos.AppSelDSCP {
				other = append(other, fmt.Sprintf("sel %d proto %d → prio %d", a.Selector, a.Protocol, a.Priority))
			}
		}
		if len(other) > 0 {
			fmt.Fprintf(tw, "  other APP:\t%s\n", strings.Join(other, "; "))
		}
		if d.ETS != nil {
			var pt, tsa []string
			for p := 0; p < 8; p++ {
				pt = append(pt, fmt.Sprintf("%d:%d", p, d.ETS.PrioTC[p]))
				tsa = append(tsa, fmt.Sprintf("%d:%s/%d%%", p, qos.TSAName(d.ETS.TCTSA[p]), d.ETS.TCTxBW[p]))
			}
			fmt.Fprintf(tw, "  prio-tc:\t%s\n", strings.Join(pt, " "))
			fmt.Fprintf(tw, "  tc-tsa/bw:\t%s\n", strings.Join(tsa, " "))
		} else {
			fmt.Fprintf(tw, "  prio-tc:\tno ETS reported\n")
		}
		if d.PFC != nil {
			var pp []string
			for p := uint8(0); p < 8; p++ {
				st := "off"
				if d.PFC.On(p) {
					st = "on"
				}
				pp = append(pp, fmt.Sprintf("%d:%s", p, st))
			}
			fmt.Fprintf(tw, "  prio-pfc:\t%s (pfc-cap %d, delay %d)\n", strings.Join(pp, " "), d.PFC.Cap, d.PFC.Delay)
			if d.PFC.Requests != [8]uint64{} || d.PFC.Indications != [8]uint64{} {
				var rq, in []string
				for p := 0; p < 8; p++ {
					rq = append(rq, fmt.Sprintf("%d:%d", p, d.PFC.Requests[p]))
					in = append(in, fmt.Sprintf("%d:%d", p, d.PFC.Indications[p]))
				}
				fmt.Fprintf(tw, "  pfc requests:\t%s\n", strings.Join(rq, " "))
				fmt.Fprintf(tw, "  pfc indications:\t%s\n", strings.Join(in, " "))
			}
		} else {
			fmt.Fprintf(tw, "  prio-pfc:\tno PFC reported\n")
		}
	}
	printDCQCN(tw, r.DCQCN)
	if r.Real == "" {
		fmt.Fprintf(tw, "  VLAN devices:\tunknown below the namespace boundary\n")
	} else if len(r.VLANs) == 0 {
		fmt.Fprintf(tw, "  VLAN devices:\tnone above %s\n", r.Real)
	} else {
		fmt.Fprintf(tw, "  VLAN devices:\n")
		for _, v := range r.VLANs {
			eg, in := v.Egress.String(), v.Ingress.String()
			if eg == "" {
				eg = "-"
			}
			if in == "" {
				in = "-"
			}
			fmt.Fprintf(tw, "    %s\t%s %d on %s\tegress-qos-map %s\tingress-qos-map %s\n", v.Netdev, v.TPID, v.ID, v.Lower, eg, in)
		}
	}
	tw.Flush()
}

// printDCQCN writes the DCQCN lines of a qos report: the notification and
// reaction point enable bits per priority and the CNP marking, with the
// file they come from.
func printDCQCN(tw io.Writer, d *qos.DCQCN) {
	switch {
	case d == nil:
		fmt.Fprintf(tw, "  DCQCN:\tnot read\n")
		return
	case d.Status != qos.SettingRead:
		fmt.Fprintf(tw, "  DCQCN:\t%s: %s\n", d.Status, ptrOr(d.Reason, "", str))
		return
	}
	bits := func(b [8]*bool) string {
		var s []string
		for p, v := range b {
			st := "?"
			if v != nil {
				st = map[bool]string{true: "on", false: "off"}[*v]
			}
			s = append(s, fmt.Sprintf("%d:%s", p, st))
		}
		return strings.Join(s, " ")
	}
	fmt.Fprintf(tw, "  DCQCN np (CNP sent):\t%s\n", bits(d.NP))
	fmt.Fprintf(tw, "  DCQCN rp (rate cut):\t%s\n", bits(d.RP))
	fmt.Fprintf(tw, "  CNP:\tdscp %s, 802.1p priority %s (%s)\n", ptrOr(d.CNPDSCP, "unknown", u8Text), ptrOr(d.CNPPrio, "unknown", u8Text), d.Source)
}
