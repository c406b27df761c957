package fashion

import "time"

// zeroTime keeps gzip headers free of timestamps so that regenerated samples are byte-identical.
var zeroTime time.Time
