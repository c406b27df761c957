// Package admission decides whether the VM fleet can finish a request before its deadline or
// must spill it to the serverless tier at once (MArk's Bouncer, §4.1).
package admission
