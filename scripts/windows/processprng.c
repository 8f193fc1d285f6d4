/*
 * bcryptprimitives.dll for Wine 8.0, which has none: Rust's std (1.78 and later) takes its random
 * numbers from ProcessPrng in bcryptprimitives.dll, so without this DLL Windows Node under Wine
 * refuses to load any Rust addon ("The specified module could not be found"). Real Windows 10
 * and 11 have the real one; this stub is only ever copied into the test Wine prefix's system32
 * by scripts/test-windows.sh, never shipped.
 *
 * ProcessPrng is documented as always succeeding and returning TRUE; this one asks Wine's
 * system RNG (BCryptGenRandom with BCRYPT_USE_SYSTEM_PREFERRED_RNG) in chunks a ULONG can hold,
 * and returns FALSE if that ever fails.
 *
 *   x86_64-w64-mingw32-gcc -O2 -s -shared -o bcryptprimitives.dll processprng.c -lbcrypt
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG))) return FALSE;
    data += chunk;
    len -= chunk;
  }
  return TRUE;
}
