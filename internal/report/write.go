package report

import (
	"bufio"
	"io"
	"strconv"

	"github.com/sloserve/sloserve/internal/slo"
)

// WriteCCDFCSV writes a latency CCDF (slo.Histogram.CCDF) in the form ReadCCDFCSV reads: a
// header "policy,latency_ms,exceeded" when header is set, then one row per point. Writers of a
// run directory call it once per policy into CCDFFile (header on the first call only).
func WriteCCDFCSV(w io.Writer, policy string, pts []slo.CCDFPoint, header bool) error {
	bw := bufio.NewWriter(w)
	if header {
		bw.WriteString("policy,latency_ms,exceeded\n")
	}
	for _, p := range pts {
		bw.WriteString(policy)
		bw.WriteByte(',')
		bw.WriteString(strconv.FormatFloat(float64(p.Latency)/1e6, 'g', 10, 64))
		bw.WriteByte(',')
		bw.WriteString(strconv.FormatFloat(p.Exceeded, 'g', 10, 64))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
