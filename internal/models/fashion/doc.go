// Package fashion reads the Fashion-MNIST data set from idx files (plain or gzip) and from the
// compact labelled sample committed with the bundled models.
package fashion
