package dashboard_test

func stopBrowser() {}
