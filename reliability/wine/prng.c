#include <windows.h>
#define RtlGenRandom SystemFunction036
BOOLEAN WINAPI RtlGenRandom(PVOID, ULONG);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T n) {
    while (n > 0) {
        ULONG k = n > 0x40000000 ? 0x40000000 : (ULONG)n;
        if (!RtlGenRandom(data, k)) return FALSE;
        data += k; n -= k;
    }
    return TRUE;
}
