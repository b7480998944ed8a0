// Package egress is the network egress policy of a confined process: an
// HTTP proxy (CONNECT tunnels and absolute-form requests) and a DNS
// resolver that let through only the hosts of sandbox.allowedDomains. They
// run in the aibuddy process, outside the sandbox, on listeners that the
// sandbox's init created inside the sandbox's own network namespace (so no
// other process or sandbox can reach them) and handed out; inside that
// namespace they are the only route out, so clearing the proxy variables
// or dialling an address directly reaches nothing (cases BH-081..BH-083).
package egress
