#!/usr/bin/env python3
"""Clicks a window's close button as a window manager would: sends WM_DELETE_WINDOW (the
ICCCM close request) to every X window whose name is argv[1]. Xvfb runs no window
manager, and xdotool (3.2016) can only destroy or kill windows, which skips the app's
close handling. Prints the number of windows asked."""
import ctypes
import ctypes.util
import subprocess
import sys

name = sys.argv[1]
ids = subprocess.run(["xdotool", "search", "--name", f"^{name}$"], capture_output=True, text=True).stdout.split()

x11 = ctypes.cdll.LoadLibrary(ctypes.util.find_library("X11"))
x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
x11.XInternAtom.restype = ctypes.c_ulong
x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
x11.XFlush.argtypes = [ctypes.c_void_p]
x11.XCloseDisplay.argtypes = [ctypes.c_void_p]


class ClientMessage(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", ctypes.c_ulong),
        ("message_type", ctypes.c_ulong),
        ("format", ctypes.c_int),
        ("data", ctypes.c_long * 5),
    ]


class XEvent(ctypes.Union):
    _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]


CLIENT_MESSAGE = 33
display = x11.XOpenDisplay(None)
if not display:
    sys.exit("cannot open the display")
protocols = x11.XInternAtom(display, b"WM_PROTOCOLS", 0)
delete = x11.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
for wid in ids:
    ev = XEvent()
    ev.xclient.type = CLIENT_MESSAGE
    ev.xclient.window = int(wid)
    ev.xclient.message_type = protocols
    ev.xclient.format = 32
    ev.xclient.data[0] = delete
    ev.xclient.data[1] = 0  # CurrentTime
    x11.XSendEvent(display, int(wid), 0, 0, ctypes.byref(ev))
x11.XFlush(display)
x11.XCloseDisplay(display)
print(len(ids))
