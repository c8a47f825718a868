// The terminal's colours, one set per app theme. xterm.js takes concrete colours (not CSS
// variables), so these mirror app.css; the ANSI palettes are tuned for contrast on each
// background (yellow and green are darker on light).

import type { ITheme } from '@xterm/xterm';

const LIGHT: ITheme = {
  background: '#fbfbfa',
  foreground: '#1d1e20',
  cursor: '#3557d4',
  cursorAccent: '#fbfbfa',
  selectionBackground: 'rgba(53, 87, 212, 0.22)',
  black: '#1d1e20',
  red: '#c4261d',
  green: '#11792f',
  yellow: '#8a6a00',
  blue: '#1f50c8',
  magenta: '#a4259f',
  cyan: '#0a7a8f',
  white: '#6a6c72',
  brightBlack: '#5d5f66',
  brightRed: '#e0372b',
  brightGreen: '#1a9a3f',
  brightYellow: '#a88200',
  brightBlue: '#3b6ef0',
  brightMagenta: '#c23cbd',
  brightCyan: '#1395ad',
  brightWhite: '#8e9096',
};

const DARK: ITheme = {
  background: '#131416',
  foreground: '#e5e6e8',
  cursor: '#7d9bff',
  cursorAccent: '#131416',
  selectionBackground: 'rgba(125, 155, 255, 0.3)',
  black: '#3a3c42',
  red: '#f0605a',
  green: '#4ec27a',
  yellow: '#e2c04f',
  blue: '#6f95ff',
  magenta: '#d27ad8',
  cyan: '#45c2d6',
  white: '#d4d5d8',
  brightBlack: '#6c6f77',
  brightRed: '#ff8f84',
  brightGreen: '#6fd18d',
  brightYellow: '#f3d98a',
  brightBlue: '#9bb2ff',
  brightMagenta: '#e9a2ee',
  brightCyan: '#7dd9e6',
  brightWhite: '#ffffff',
};

export function terminalTheme(dark: boolean): ITheme {
  return dark ? DARK : LIGHT;
}
