package checks

import (
	"context"

	"github.com/cairndns/cairn/catalog"
)

// aliasProbe mirrors the health of another service instance, or of a
// node, read from an AliasSource. Its results skip the thresholds: the
// aliased checks have been through their own.
type aliasProbe struct {
	src     AliasSource
	node    string
	service string
}

func (p *aliasProbe) probe(ctx context.Context) result {
	status, found, err := p.src.AliasHealth(ctx, p.node, p.service)
	what := "service " + p.service
	if p.service == "" {
		what = "node " + p.node
	} else if p.node != "" {
		what += " on node " + p.node
	}
	switch {
	case err != nil:
		return result{catalog.HealthCritical, "alias " + what + ": " + err.Error()}
	case !found:
		return result{catalog.HealthCritical, "alias " + what + ": no such " + kindOf(p.service)}
	case status == catalog.HealthMaintenance:
		// Maintenance is an operator's word about the aliased instance,
		// not about this one: to this check it just means "not serving".
		return result{catalog.HealthCritical, "alias " + what + ": in maintenance"}
	case status == catalog.HealthPassing, status == catalog.HealthWarning, status == catalog.HealthCritical:
		return result{status, "alias " + what + ": " + string(status)}
	}
	return result{catalog.HealthCritical, "alias " + what + ": unknown status " + string(status)}
}

func kindOf(service string) string {
	if service == "" {
		return "node"
	}
	return "service"
}
