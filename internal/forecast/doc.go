// Package forecast predicts the next P_w units of peak request rate from their history (MArk §4.2).
package forecast
