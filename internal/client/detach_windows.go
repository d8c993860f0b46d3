package client

import "syscall"

const detachedProcess = 0x00000008

// detached starts the daemon without the bridge's console.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: detachedProcess | syscall.CREATE_NEW_PROCESS_GROUP}
}
