#!/usr/bin/env bash
# Build dist/SpecChat.app and dist/SpecChat-<version>.dmg on an Apple silicon Mac.
#
# Steps: a clean virtual environment, the .app (py2app), its self-test, code signing (ad hoc
# unless SPECCHAT_SIGN_IDENTITY names a Developer ID), a DMG, and notarization when credentials
# are given. Environment variables (all optional):
#   SPECCHAT_PYTHON          Python used to make the build venv (default: python3; a python.org
#                            or Homebrew framework build, native arm64, >= 3.11)
#   SPECCHAT_SIGN_IDENTITY   e.g. "Developer ID Application: Jane Doe (TEAMID)"; default: ad hoc (-)
#   SPECCHAT_NOTARY_PROFILE  a `xcrun notarytool store-credentials` keychain profile, or all three:
#   APPLE_ID, APPLE_TEAM_ID, APPLE_APP_SPECIFIC_PASSWORD
set -euo pipefail

fail() { echo "build_macos.sh: $*" >&2; exit 1; }

if [[ "$(uname -s)" != "Darwin" ]]; then
  fail "SpecChat.app can only be built on macOS (py2app, codesign and hdiutil are macOS tools); this machine runs $(uname -s). Nothing was built."
fi
[[ "$(uname -m)" == "arm64" ]] || fail "build on an Apple silicon Mac (arm64); this one is $(uname -m)."

cd "$(dirname "$0")/.."
PYTHON="${SPECCHAT_PYTHON:-python3}"
IDENTITY="${SPECCHAT_SIGN_IDENTITY:--}"
VENV=build/venv-macos
APP=dist/SpecChat.app

notary_args=()
if [[ -n "${SPECCHAT_NOTARY_PROFILE:-}" ]]; then
  notary_args=(--keychain-profile "$SPECCHAT_NOTARY_PROFILE")
elif [[ -n "${APPLE_ID:-}${APPLE_TEAM_ID:-}${APPLE_APP_SPECIFIC_PASSWORD:-}" ]]; then
  for var in APPLE_ID APPLE_TEAM_ID APPLE_APP_SPECIFIC_PASSWORD; do
    [[ -n "${!var:-}" ]] || fail "notarizing with an Apple ID needs APPLE_ID, APPLE_TEAM_ID and APPLE_APP_SPECIFIC_PASSWORD; $var is not set."
  done
  notary_args=(--apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" --password "$APPLE_APP_SPECIFIC_PASSWORD")
fi
if [[ ${#notary_args[@]} -gt 0 && "$IDENTITY" == "-" ]]; then
  fail "notarization needs a Developer ID signature: set SPECCHAT_SIGN_IDENTITY."
fi

"$PYTHON" -c 'import sys, platform; sys.exit(not (sys.version_info >= (3, 11) and platform.machine() == "arm64"))' \
  || fail "$PYTHON must be a native arm64 Python >= 3.11 (set SPECCHAT_PYTHON)."

echo "==> clean virtual environment in $VENV"
rm -rf "$VENV" build/py2app build/dmg "$APP"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet '.[macos-build]'
VERSION="$("$VENV/bin/python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"

echo "==> icon"
"$VENV/bin/python" packaging/build_icon.py

echo "==> SpecChat $VERSION .app (py2app)"
"$VENV/bin/python" packaging/setup_py2app.py py2app
[[ -d "$APP" ]] || fail "py2app finished but $APP is missing."

# MLX loads its Metal kernels from mlx.metallib next to libmlx.dylib: keep them together even if
# py2app relocated the library.
metallib="$(find "$APP/Contents/Resources/lib" -name mlx.metallib -print -quit)"
[[ -n "$metallib" ]] || fail "no mlx.metallib in $APP: MLX could not run on the GPU."
while IFS= read -r lib; do
  [[ -f "$(dirname "$lib")/mlx.metallib" ]] || cp "$metallib" "$(dirname "$lib")/"
done < <(find "$APP" -name libmlx.dylib)

echo "==> signing ($([[ "$IDENTITY" == "-" ]] && echo "ad hoc" || echo "$IDENTITY"))"
if [[ "$IDENTITY" == "-" ]]; then
  codesign --force --deep --sign - "$APP"
else
  codesign --force --deep --options runtime --timestamp \
    --entitlements packaging/entitlements.plist --sign "$IDENTITY" "$APP"
fi
codesign --verify --deep --strict "$APP"

echo "==> self-test of the signed bundle"
"$APP/Contents/MacOS/SpecChat" --self-test || fail "the bundle's self-test failed (see above)."

DMG="dist/SpecChat-$VERSION.dmg"
echo "==> $DMG"
mkdir -p build/dmg
ditto "$APP" build/dmg/SpecChat.app
ln -s /Applications build/dmg/Applications
rm -f "$DMG"
hdiutil create -volname "SpecChat $VERSION" -srcfolder build/dmg -fs HFS+ -format UDZO -ov "$DMG"
if [[ "$IDENTITY" != "-" ]]; then
  codesign --force --timestamp --sign "$IDENTITY" "$DMG"
fi

if [[ ${#notary_args[@]} -gt 0 ]]; then
  echo "==> notarizing (this waits for Apple)"
  xcrun notarytool submit "$DMG" "${notary_args[@]}" --wait
  xcrun stapler staple "$DMG"
  xcrun stapler validate "$DMG"
else
  echo "==> not notarized (set SPECCHAT_NOTARY_PROFILE, or APPLE_ID + APPLE_TEAM_ID + APPLE_APP_SPECIFIC_PASSWORD)"
fi

echo "done: $APP and $DMG"
