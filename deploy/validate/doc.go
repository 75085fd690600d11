// Package validate checks roce-probe's deployment files (deploy/) the way
// the engines that read them would: every Kubernetes manifest decoded
// strictly into the Kubernetes API types (k8s.io/api) or the Prometheus
// operator's (monitoring.coreos.com/v1), refusing unknown fields and
// duplicate keys; the alert rules file into the operator's rule groups, so
// that the PrometheusRule can be compared with it; the Kubernetes scrape
// configuration into Prometheus's own configuration types; the agents'
// configurations into the shape docs/fabric.md gives. Its tests check the
// security settings the deployment promises (only CAP_NET_RAW, /sys
// read-only, limits, hostNetwork), that the pieces fit together, the
// systemd unit's sandbox and the Dockerfile's static build.
//
// It is a module of its own, so that roce-probe's module never depends on
// the Kubernetes and Prometheus types: scripts/test.sh runs its tests with
// `go test ./...` in deploy/validate.
package validate
