//go:build !unix

package main

import "syscall"

// ownGroup: no process groups here.
func ownGroup() *syscall.SysProcAttr { return nil }
