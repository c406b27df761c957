// Package slomon watches the SLO attainment of the last M requests and decides reactive launches
// when it falls below SL_min (MArk §4.4).
package slomon
