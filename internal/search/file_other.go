//go:build !unix

package search

import "os"

type rawFile = os.File

func openRead(path string) (*rawFile, error) { return os.Open(path) }
