package nvimbridge

// UseStringProposals makes b pass diff proposals as strings, as it does
// when it cannot write a proposal file.
func UseStringProposals(b *Bridge) {
	b.proposals.mu.Lock()
	b.proposals.closed = true
	b.proposals.mu.Unlock()
}

// ProposalDir is where b writes proposal files ("" before the first).
func ProposalDir(b *Bridge) string {
	b.proposals.mu.Lock()
	defer b.proposals.mu.Unlock()
	return b.proposals.dir
}
