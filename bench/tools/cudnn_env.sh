#!/usr/bin/env bash
# Point the harness's vendor builds at a cuDNN installed anywhere on this machine (the system's, or
# the nvidia-cudnn-* wheel that PyTorch brings): `source bench/tools/cudnn_env.sh`.
# Appends cudnn.h's folder to $SKILLBASE_VENDOR_INCLUDE and a folder with libcudnn.so to
# $SKILLBASE_VENDOR_LIB (wheels ship only libcudnn.so.9: an unversioned link to it is made in
# /tmp/skillbase-cudnn-lib, since -lcudnn needs one). Without cuDNN it says so and changes nothing;
# the bench then records its cuDNN implementations as skipped.
_cudnn_header=$(find /usr/include /usr/local /opt "$(python3 -c 'import sys; print(sys.prefix)')" /tmp/site \
  -name cudnn.h -not -path '*/proc/*' 2>/dev/null | head -n 1)
_cudnn_lib=$(find /usr/lib /usr/local /opt "$(python3 -c 'import sys; print(sys.prefix)')" /tmp/site \
  \( -name 'libcudnn.so' -o -name 'libcudnn.so.[0-9]*' \) 2>/dev/null | sort | head -n 1)
if [ -z "$_cudnn_header" ] || [ -z "$_cudnn_lib" ]; then
  echo "cudnn_env: no cuDNN found (cudnn.h: ${_cudnn_header:-none}, libcudnn: ${_cudnn_lib:-none})"
else
  _cudnn_libdir=$(dirname "$_cudnn_lib")
  if [ ! -e "$_cudnn_libdir/libcudnn.so" ]; then
    mkdir -p /tmp/skillbase-cudnn-lib
    ln -sf "$_cudnn_lib" /tmp/skillbase-cudnn-lib/libcudnn.so
    _cudnn_libdir="/tmp/skillbase-cudnn-lib:$_cudnn_libdir"
  fi
  export SKILLBASE_VENDOR_INCLUDE="${SKILLBASE_VENDOR_INCLUDE:+$SKILLBASE_VENDOR_INCLUDE:}$(dirname "$_cudnn_header")"
  export SKILLBASE_VENDOR_LIB="${SKILLBASE_VENDOR_LIB:+$SKILLBASE_VENDOR_LIB:}$_cudnn_libdir"
  echo "cudnn_env: cudnn.h in $(dirname "$_cudnn_header"), libcudnn in $_cudnn_libdir"
fi
unset _cudnn_header _cudnn_lib _cudnn_libdir
