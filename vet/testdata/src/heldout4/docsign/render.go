package docsign

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"text/template"
)

var contractTmpl = template.Must(template.New("contract").Parse(
	"EMPLOYMENT CONTRACT\n\nEmployer: {{.Employer}}\nEmployee: {{.Name}}\nRole: {{.Role}}\nSalary: {{.Salary}}\nStart: {{.Start}}\n"))

// render produces the contract document and its digest. It can be slow for
// long annexes, so it honours ctx.
func render(ctx context.Context, offer offerAccepted) ([]byte, [32]byte, error) {
	var buf bytes.Buffer
	if err := contractTmpl.Execute(&buf, offer); err != nil {
		return nil, [32]byte{}, fmt.Errorf("render contract: %w", err)
	}
	for _, annex := range offer.Annexes {
		if err := ctx.Err(); err != nil {
			return nil, [32]byte{}, err
		}
		buf.WriteString("\nANNEX: " + annex + "\n")
	}
	return buf.Bytes(), sha256.Sum256(buf.Bytes()), nil
}
