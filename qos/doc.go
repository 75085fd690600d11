// Package qos turns an RDMA flow's service level, traffic class or ToS into
// what goes on the wire (PCP, DSCP, ECN) for each driver, reads DCB state
// (PFC, ETS, APP/trust) over rtnetlink, and gives a lossless-or-not verdict
// with every reason.
package qos
