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

func init() { register(newCheckCmd) }

func newCheckCmd() *cobra.Command {
	var src hostFlags
	var format string
	var path qos.Path
	var index, tclass, sl, tos int
	var rdmaCM bool
	c := &cobra.Command{
		Use:   "check --dev D [--port P] --gid-index I (--tclass T --sl S | --rdma-cm [--tos T])",
		Short: "Follow a flow's sl/traffic class (or rdma_cm ToS) to PCP, DSCP, ECN and a lossless verdict",
		Long: `check follows one RDMA flow from the address handle to the switch: the GID
entry's netdev and VLAN chain, the driver's rule for sl and traffic_class (or
rdma_cm's ToS → priority → SL), the PCP, DSCP and ECN on the wire, the priority
the port classifies it into under its trust mode, that priority's traffic class
and whether PFC protects it. Every step says why; warnings name the usual
misconfigurations (untagged traffic under PCP trust, a DSCP missing from the
APP table, ECN not ECT, an sl the driver ignores, a priority without PFC, an
rdma_cm priority without egress-map entry).

--rdma-cm without --tos is a connection whose application sets no ToS: rdma_cm
then uses the port's default_roce_tos from configfs (/sys/kernel/config/
rdma_cm/DEV/ports/P), which check reads and names; when the host does not
expose it, 0 is assumed with a warning. An MLNX_OFED mlx5 traffic class
override (/sys/class/infiniband/DEV/tc/P/traffic_class) replaces the traffic
class of connected QPs: check shows the step and warns.

vlan and pcp are the outermost tag's: the one the first switch classifies on.
--from FILE analyses a snapshot written by 'roce-probe collect'. On a host
without RDMA devices the predicted Soft-RoCE tables are used (said so).

Exit status: 0 lossless, 1 lossy or unknown, 2 bad input. Needs no privileges.`,
		Example: `  roce-probe check --dev mlx5_0 --gid-index 3 --tclass 106 --sl 3
  roce-probe check --dev mlx5_0 --gid-index 3 --rdma-cm --tos 106
  roce-probe check --dev mlx5_0 --gid-index 3 --rdma-cm
  roce-probe check --from node1.json.gz --dev mlx5_0 --gid-index 3 --tclass 106 --sl 3 -o json`,
		Args: noArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			// Before cobra's flag groups: --rdma-cm may come without
			// --tos (rdma_cm's configfs default applies), --tos not
			// without --rdma-cm.
			fl := cmd.Flags()
			if fl.Changed("tos") && !rdmaCM {
				return usagef("--rdma-cm and --tos go together: --rdma-cm is missing")
			}
			if rdmaCM && !fl.Changed("tos") && (fl.Changed("tclass") || fl.Changed("sl")) {
				return usagef("--rdma-cm cannot be used with --tclass or --sl: an rdma_cm flow's traffic class and sl come from its ToS (--tos, or rdma_cm's configfs default_roce_tos without it)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := src.requireDev("mlx5_0 or rxe0"); err != nil {
				return err
			}
			v, err := src.view(collect.SectionDCB | collect.SectionSettings)
			if err != nil {
				return err
			}
			if err := src.checkDev(v); err != nil {
				return err
			}
			src.notePredicted(cmd.ErrOrStderr(), v)
			s, err := v.Source(src.dev, src.port, index)
			if err != nil {
				return usagef("--gid-index %d: %v", index, err)
			}
			fp := host.FlowParams{SL: uint8(sl), TrafficClass: uint8(tclass), RDMACM: rdmaCM, Path: path}
			if cmd.Flags().Changed("tos") {
				t := uint8(tos)
				fp.TOS = &t
			}
			r, err := qos.Check(v.Flow(s, fp))
			if err != nil {
				return usageError{err}
			}
			if format == "json" {
				if err := writeJSONIndent(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else {
				printCheck(cmd.OutOrStdout(), r, s.Driver)
			}
			if r.Verdict != qos.Lossless {
				return findingError{}
			}
			return nil
		},
	}
	fl := c.Flags()
	src.add(c, hostFlagSet{dev: true, port: true, portDef: 1, devUsage: "RDMA device, e.g. mlx5_0 or rxe0 (required)"})
	intVar(fl, &index, "gid-index", 0, 0, 255, "source GID index (ibv_ah_attr.grh.sgid_index), 0..255 (required)")
	intVar(fl, &tclass, "tclass", 0, 0, 255, "traffic class of the AH (grh.traffic_class), 0..255")
	intVar(fl, &sl, "sl", 0, 0, 15, "service level of the AH, 0..15")
	intVar(fl, &tos, "tos", 0, 0, 255, "rdma_cm ToS, 0..255 (with --rdma-cm)")
	fl.BoolVar(&rdmaCM, "rdma-cm", false, "the flow is set up by rdma_cm: sl and traffic class come from --tos")
	pathVar(fl, &path, "how the AV reaches the driver: user-ah (default for verbs), kernel-ah or connected-qp (default for rdma_cm)")
	outputVar(fl, &format, "table", "json")
	flagRequired(c, "gid-index")
	flagsTogether(c, "tclass", "sl")
	flagsExclusive(c, "rdma-cm", "tclass")
	flagsExclusive(c, "rdma-cm", "sl")
	flagsOneRequired(c, "tclass", "rdma-cm")
	return c
}

func printCheck(w io.Writer, r qos.Result, info qos.DriverInfo) {
	if r.Predicted {
		fmt.Fprintln(w, "(predicted: the host has no RDMA device; this is the Soft-RoCE table rdma link add would build)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "flow:\t%s port %d GID index %d (%s) on %s, driver %s (%s)\n", r.Device, r.Port, r.Index, r.GIDType, r.Netdev, r.Driver, info.Evidence)
	vlanS := "untagged"
	if r.VLANChain == nil {
		vlanS = "VLAN tags unknown"
	}
	if len(r.VLANChain) > 0 {
		var parts []string
		for _, t := range r.VLANChain {
			parts = append(parts, fmt.Sprintf("%s %d pcp %s", t.TPID, t.ID, ptrOr(t.PCP, "-", u8Text)))
		}
		vlanS = strings.Join(parts, " / ")
	}
	fmt.Fprintf(tw, "wire:\t%s, DSCP %s, ECN %s\n", vlanS, ptrOr(r.DSCP, "-", u8Text), ptrOr(r.ECN, "-", qos.ECN.String))
	pfc := "-"
	if r.PFC != nil {
		pfc = map[bool]string{true: "on", false: "off"}[*r.PFC]
	}
	fmt.Fprintf(tw, "port:\ttrust %s, priority %s, tc %s, pfc %s\n", r.Trust, ptrOr(r.Priority, "-", u8Text), ptrOr(r.TC, "-", u8Text), pfc)
	if b := r.Bond; b != nil {
		for _, s := range b.Slaves {
			pfc := "-"
			if s.PFC != nil {
				pfc = map[bool]string{true: "on", false: "off"}[*s.PFC]
			}
			fmt.Fprintf(tw, "slave %s:\ttrust %s, priority %s, tc %s, pfc %s: %s\n", s.Netdev, s.Trust, ptrOr(s.Priority, "-", u8Text), ptrOr(s.TC, "-", u8Text), pfc, s.Verdict)
		}
		if len(b.Backup) > 0 {
			fmt.Fprintf(tw, "standby:\t%s (%s's active-backup standby slaves: they carry the flow after a failover)\n", strings.Join(b.Backup, ", "), b.Netdev)
		}
	}
	fmt.Fprintf(tw, "verdict:\t%s\n", strings.ToUpper(string(r.Verdict)))
	tw.Flush()
	for _, x := range r.Reasons {
		fmt.Fprintf(w, "  because: %s\n", x)
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	for _, x := range r.Unknowns {
		fmt.Fprintf(w, "  unknown: %s\n", x)
	}
	fmt.Fprintln(w, "\nsteps:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range r.Steps {
		fmt.Fprintf(tw, "  %d.\t%s\t%s\t%s\n", i+1, s.Step, s.Value, s.Why)
	}
	tw.Flush()
}
