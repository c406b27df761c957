// Package fanout is the gateway's live Cocktail ensembles (Gunasekaran et al., NSDI'22;
// docs/ensembles-live.md): an ensemble request fans out to its selected members' own batchers
// through Members (the gateway), and the votes that arrive before the deadline are combined
// (weighted or majority). Selection, weights and popularity are internal/ensemble's pure
// decisions; this package owns their live state, the request path and label feedback. HTTP
// routing stays in the gateway.
package fanout
