// Package cost provides the instance catalog (VM, burstable and serverless types with prices,
// launch delays and billing rules), its YAML form, and the pure billing arithmetic.
package cost
