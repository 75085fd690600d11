// Package validate checks roce-probe's deployment files (deploy/) the way
// the engines that read them would: every Kubernetes manifest decoded
// strictly into the Kubernetes API types (k8s.io/api) or the Prometheus
// operator's (monitoring.coreos.com/v1), refusing unknown fields and
// duplicate keys; the alert rules file into the operator's rule groups, so
// that the PrometheusRule can be compared with it; the Kubernetes scrape
// configuration into Prometheus's own configuration types; every agent
// configuration (the ConfigMap's, systemd/agent.yaml, any other YAML or
// JSON file outside kubernetes/ and prometheus/) by the agent's own code,
// internal/agent's ReadConfig (the defaults, ParseConfig,
// Config.Validate), as `roce-probe agent --config` reads it: this module
// keeps no copy of the agent's schema. Its
// tests check the security settings the deployment promises (only
// CAP_NET_RAW, /sys read-only, limits, hostNetwork), that the pieces fit
// together, the systemd unit's sandbox and the Dockerfile's static build.
// The Grafana dashboards (deploy/grafana) are checked against
// docs/metrics.md: every query parsed by Prometheus's PromQL parser and
// every metric and label in it one the document lists (MetricsDoc,
// CheckDashboard); their Kubernetes wrappers are generated from them
// (DashboardWrappers, go generate) and decoded. The alert rules' expressions
// are checked alike, and the labels their annotations read
// (CheckRules).
//
// It is a module of its own, so that roce-probe's module never depends on
// the Kubernetes and Prometheus types; it requires roce-probe's module
// replaced by this repository (replace ... => ../..), which is what lets
// it import internal/agent (the go command allows an internal package to
// every import path below its parent, across modules). scripts/test.sh
// runs its tests with `go test ./...` in deploy/validate.
package validate

//go:generate go run ./cmd/grafana-wrappers
